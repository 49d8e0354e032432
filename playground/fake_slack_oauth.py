"""Slack's OAuth token exchange as the fake serves it: `oauth.v2.access` turns a code granted
for a workspace into that workspace's bot token (docs/workspaces.md). The client id and
secret come as HTTP Basic credentials (slack_sdk's way) or as form fields; each token is then
accepted by the fake for its own team only, and a channel given to a team is reached only
with that team's token."""

from __future__ import annotations

import base64
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field

from playground.fake_slack_messages import BOT_ID, BOT_USER_ID, JSON

APP_ID = "A0RED"


@dataclass
class Grant:
    team: str
    user: str
    token: str


@dataclass
class FakeOAuth:
    """Installs the app into more workspaces of a `FakeSlack` (`fake.oauth = FakeOAuth(…)`)."""

    team_tokens: dict[str, str]  # the fake's own map: token -> team
    channel_teams: dict[str, str]
    client_id: str
    client_secret: str
    scopes: str = "app_mentions:read,chat:write"
    _codes: dict[str, Grant] = field(default_factory=dict)
    _seq: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def grant(self, team: str, user: str, channels: tuple[str, ...] = ()) -> str:
        """A person of `team` approved the install: the code Slack hands the redirect."""
        n = next(self._seq)
        code = f"code-{team}-{n}"
        self._codes[code] = Grant(team, user, f"xoxb-{team}-{n}")
        for channel in channels:
            self.channel_teams[channel] = team
        return code

    def access(self, params: JSON, headers: Mapping[str, str]) -> JSON:
        if not self._client_ok(params, headers.get("Authorization", "")):
            return {"ok": False, "error": "invalid_client_id"}
        grant = self._codes.pop(str(params.get("code") or ""), None)
        if grant is None:
            return {"ok": False, "error": "invalid_code"}
        self.team_tokens[grant.token] = grant.team
        return {"ok": True, "app_id": APP_ID, "authed_user": {"id": grant.user},
                "scope": self.scopes, "token_type": "bot", "access_token": grant.token,
                "bot_user_id": BOT_USER_ID, "bot_id": BOT_ID,
                "team": {"id": grant.team, "name": f"Team {grant.team}"},
                "enterprise": None, "is_enterprise_install": False}

    def _client_ok(self, params: JSON, authorization: str) -> bool:
        client_id, secret = params.get("client_id"), params.get("client_secret")
        if authorization.startswith("Basic "):
            try:
                raw = base64.b64decode(authorization[len("Basic "):]).decode()
            except ValueError:
                return False
            client_id, _, secret = raw.partition(":")
        return client_id == self.client_id and secret == self.client_secret
