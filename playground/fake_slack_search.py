"""The fake's Real-time Search API: `assistant.search.context` over the workspace's messages,
searched as the person whose message event carried the `action_token`, and
`conversations.info` (a channel's name).

As Slack documents it: arguments `query` (required), `action_token` (required with a bot token:
the one a message event carried), `channel_types` (public_channel, private_channel, mpim, im;
default public_channel), `content_types` (messages, files, channels, users; only messages are
held here), `include_bots`, `before` / `after` (UNIX times), `limit` (1-20, default 20), `sort`
(score or timestamp), `sort_dir` and `cursor`; each channel type needs its scope
(search:read.public, .private, .mpim, .im), else `missing_scope` with `needed` and
`provided`. A hit is `{author_user_id, team_id, channel_id, message_ts, content,
is_author_bot, permalink}` (a reply's permalink names its thread). A person sees every public
channel's messages and, of the other kinds, only those of the conversations they are a member
of. Errors: `invalid_arguments` (no query, a bad limit or type), `invalid_action_token` (none
given, one never issued, or expired: the code this fake uses, as Slack's page does not list
one), `missing_scope`, and the fake's usual `not_authed`, `invalid_auth` and `ratelimited`.
"""

from __future__ import annotations

import base64
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from playground.fake_slack_messages import JSON, TEAM_ID, Message, SlackError, flag

if TYPE_CHECKING:
    from playground.fake_slack import FakeSlack

SCOPES = {"public_channel": "search:read.public", "private_channel": "search:read.private",
          "mpim": "search:read.mpim", "im": "search:read.im"}
CONTENT_TYPES = ("messages", "files", "channels", "users")
MAX_LIMIT = 20
ACTION_TOKEN_TTL_S = 3600.0  # the fake's choice: Slack says only that the token is short-lived
_WORD = re.compile(r"[a-z0-9]{2,}")
_STOP_WORDS = ("the a an and or of in on at to for is are was were how what did does do we our "
               "it its by with from")
_STOP = frozenset(_STOP_WORDS.split())


@dataclass
class Channel:
    """A conversation of the fake workspace: its name, kind and members."""

    id: str
    name: str
    kind: str = "public_channel"
    members: set[str] = field(default_factory=set)

    def visible_to(self, user: str) -> bool:
        return self.kind == "public_channel" or user in self.members


class FakeSearch:
    def __init__(self, fake: FakeSlack) -> None:
        self.fake = fake
        self.scopes: set[str] = set()  # the bot token's scopes beyond the fake's usual ones
        self.channels: dict[str, Channel] = {}
        self._tokens: dict[str, tuple[str, float]] = {}  # action token -> (user, expiry)
        fake.add_method("assistant.search.context", self.search)
        fake.add_method("conversations.info", self.info)

    def add_channel(self, channel: str, name: str, kind: str = "public_channel",
                    members: set[str] | None = None) -> Channel:
        self.channels[channel] = Channel(channel, name, kind, set(members or ()))
        return self.channels[channel]

    def channel(self, channel: str) -> Channel:
        """A channel never added is a public one named after its id."""
        return self.channels.get(channel) or Channel(channel, channel.lower())

    def issue(self, user: str) -> str:
        """The action token a message event of `user` carries."""
        token = f"{int(time.time())}.{secrets.randbelow(10**6)}.{secrets.token_hex(8)}"
        self._tokens[token] = (user, time.monotonic() + ACTION_TOKEN_TTL_S)
        return token

    def expire(self, token: str) -> None:
        self._tokens.pop(token, None)

    def search(self, params: JSON) -> JSON:
        query = str(params.get("query") or "").strip()
        if not query:
            raise SlackError("invalid_arguments", "missing required field: query")
        kinds = self._kinds(params)
        user = self._asker(params)
        limit = self._limit(params)
        found = [m for m in self._messages(user, kinds, params) if _score(query, m.text) > 0]
        found.sort(key=lambda m: _order(params, query, m))
        start = _cursor(params.get("cursor"))
        page = found[start:start + limit]
        more = start + limit < len(found)
        return {"results": {"messages": [self._hit(m) for m in page]},
                "response_metadata": {"next_cursor": _next(start + limit) if more else ""}}

    def info(self, params: JSON) -> JSON:
        channel = self.fake_channel(str(params.get("channel") or ""))
        needed = "channels:read" if channel.kind == "public_channel" else "groups:read"
        if needed not in self.scopes:
            raise SlackError("missing_scope", needed=needed, provided=self._provided())
        return {"channel": {"id": channel.id, "name": channel.name,
                            "is_channel": channel.kind in ("public_channel", "private_channel"),
                            "is_private": channel.kind != "public_channel",
                            "is_im": channel.kind == "im", "is_mpim": channel.kind == "mpim"}}

    def fake_channel(self, channel: str) -> Channel:
        if not channel or not (channel in self.channels or self.fake.messages(channel)):
            raise SlackError("channel_not_found")
        return self.channel(channel)

    def _kinds(self, params: JSON) -> list[str]:
        kinds = _listed(params.get("channel_types"), ["public_channel"])
        contents = _listed(params.get("content_types"), ["messages"])
        if any(k not in SCOPES for k in kinds) or any(c not in CONTENT_TYPES for c in contents):
            raise SlackError("invalid_arguments", "unknown channel_types or content_types")
        for kind in kinds:
            if SCOPES[kind] not in self.scopes:
                raise SlackError("missing_scope", needed=SCOPES[kind], provided=self._provided())
        return kinds if "messages" in contents else []

    def _asker(self, params: JSON) -> str:
        token = str(params.get("action_token") or "")
        user, expiry = self._tokens.get(token, ("", 0.0))
        if not user or time.monotonic() > expiry:
            raise SlackError("invalid_action_token")
        return user

    @staticmethod
    def _limit(params: JSON) -> int:
        raw = params.get("limit", MAX_LIMIT)
        try:
            limit = int(raw)
        except (TypeError, ValueError) as exc:
            raise SlackError("invalid_arguments", "limit must be a number") from exc
        if not 1 <= limit <= MAX_LIMIT:
            raise SlackError("invalid_arguments", f"limit must be 1-{MAX_LIMIT}")
        return limit

    def _messages(self, user: str, kinds: list[str], params: JSON) -> list[Message]:
        bots = flag(params.get("include_bots"))
        after, before = _time(params.get("after")), _time(params.get("before"))
        seen = self.fake.conversations() | set(self.channels)
        visible = [c for c in map(self.channel, sorted(seen))
                   if c.kind in kinds and c.visible_to(user)]
        return [m for c in visible for m in self.fake.messages(c.id)
                if (bots or not m.bot_id) and (after is None or float(m.ts) > after)
                and (before is None or float(m.ts) < before)]

    def _hit(self, msg: Message) -> JSON:
        link = f"{self.fake.permalink_base}/archives/{msg.channel}/p{msg.ts.replace('.', '')}"
        if msg.thread_ts and msg.thread_ts != msg.ts:
            link += f"?thread_ts={msg.thread_ts}&cid={msg.channel}"
        return {"author_user_id": msg.user, "team_id": TEAM_ID, "channel_id": msg.channel,
                "message_ts": msg.ts, "content": msg.text, "is_author_bot": bool(msg.bot_id),
                "permalink": link}

    def _provided(self) -> str:
        return ",".join(sorted(self.scopes | {"chat:write", "app_mentions:read"}))


def _listed(value: object, default: list[str]) -> list[str]:
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()] or default
    return [p.strip() for p in str(value or "").split(",") if p.strip()] or default


def _score(query: str, text: str) -> int:
    asked = set(_WORD.findall(query.lower())) - _STOP
    return len(asked & set(_WORD.findall(text.lower())))


def _order(params: JSON, query: str, msg: Message) -> tuple[float, float]:
    by_time = str(params.get("sort") or "score") == "timestamp"
    sign = 1.0 if str(params.get("sort_dir") or "desc") == "asc" else -1.0
    score = float(msg.ts) if by_time else float(_score(query, msg.text))
    return sign * score, -float(msg.ts)


def _time(value: object) -> float | None:
    try:
        return float(str(value)) if value not in (None, "") else None
    except ValueError as exc:
        raise SlackError("invalid_arguments", "before and after are UNIX times") from exc


def _cursor(value: object) -> int:
    if not value:
        return 0
    try:
        return max(0, int(base64.b64decode(str(value)).decode().removeprefix("page:")))
    except (ValueError, UnicodeDecodeError) as exc:
        raise SlackError("invalid_cursor") from exc


def _next(offset: int) -> str:
    return base64.b64encode(f"page:{offset}".encode()).decode()
