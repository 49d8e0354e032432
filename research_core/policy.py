"""The team policy in one place (docs/teams.md): a YAML file named by RED_POLICY_FILE.

- `admins`: Slack user ids that may see everyone's usage (Home tab, `redsearch usage`);
- `channels`: where the bot answers at all (`["*"]`: everywhere);
- `deep`: who may choose Deep, per channel (`default` for channels not listed); without a
  policy file (or without `deep`) it is RED_DEEP_ALLOWED, per user as before;
- `caps`: per user and per channel, per day and per month: `tokens`, `cost_usd`, `runs`
  (a missing value is no cap);
- `slack_search`: the workspaces whose own messages a run may search (Slack's
  `assistant.search.context`, with the asking person's action token), and which kinds of
  conversations; off unless a workspace is named.
- `steer`: who may steer a running research by writing in its thread: `requester` (the
  default: the person who asked), `*` (anyone in the thread), Slack user ids; admins may
  always.

Without a file the defaults hold: no admins, every channel, Deep from RED_DEEP_ALLOWED, no
caps. A malformed file stops start-up with one line naming the key (`SettingsError`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from research_core import safe_yaml
from research_core.errors import SettingsError

MAX_POLICY_BYTES = 256 * 1024
Scope = Literal["user", "channel"]
Period = Literal["day", "month"]
Measure = Literal["tokens", "cost_usd", "runs"]
ChannelType = Literal["public_channel", "private_channel", "mpim", "im"]
SCOPES: tuple[Scope, ...] = ("user", "channel")
PERIODS: tuple[Period, ...] = ("day", "month")
MEASURES: tuple[Measure, ...] = ("tokens", "cost_usd", "runs")
_STRICT = ConfigDict(extra="forbid", frozen=True)
REQUESTER = "requester"  # in `steer`: the person who asked


class Limits(BaseModel):
    """The caps of one period; None is no cap."""

    model_config = _STRICT
    tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    runs: int | None = Field(default=None, ge=0)

    def cap(self, measure: Measure) -> float | None:
        value: float | None = getattr(self, measure)
        return value


class PeriodCaps(BaseModel):
    model_config = _STRICT
    day: Limits = Limits()
    month: Limits = Limits()


class Caps(BaseModel):
    model_config = _STRICT
    user: PeriodCaps = PeriodCaps()
    channel: PeriodCaps = PeriodCaps()

    def limits(self, scope: Scope, period: Period) -> Limits:
        caps: PeriodCaps = getattr(self, scope)
        limits: Limits = getattr(caps, period)
        return limits

    @property
    def any(self) -> bool:
        return any(self.limits(s, p).cap(m) is not None
                   for s in SCOPES for p in PERIODS for m in MEASURES)


class DeepRule(BaseModel):
    """Who may choose Deep: `default` everywhere, `channels` per channel ("*" = everyone)."""

    model_config = _STRICT
    default: tuple[str, ...] = ("*",)
    channels: dict[str, tuple[str, ...]] = {}

    def allowed_in(self, channel: str | None) -> tuple[str, ...]:
        if channel is not None and channel in self.channels:
            return self.channels[channel]
        return self.default


class SlackSearchRule(BaseModel):
    """Searching the workspace's own messages: on in the workspaces `teams` names ("*":
    every one), over the conversations `channel_types` names (each needs its scope:
    search:read.public, search:read.private, search:read.mpim, search:read.im)."""

    model_config = _STRICT
    teams: tuple[str, ...] = ()
    channel_types: tuple[ChannelType, ...] = Field(default=("public_channel",), min_length=1)

    def on_in(self, team: str | None) -> bool:
        return "*" in self.teams or (team is not None and team in self.teams)


class Policy(BaseModel):
    model_config = _STRICT
    admins: tuple[str, ...] = ()
    channels: tuple[str, ...] = ("*",)
    deep: DeepRule | None = None
    caps: Caps = Caps()
    slack_search: SlackSearchRule = SlackSearchRule()
    steer: tuple[str, ...] = (REQUESTER,)

    def may_steer(self, user: str, requester: str) -> bool:
        """Whether `user` may steer the research `requester` asked for."""
        allowed = set(self.steer)
        return "*" in allowed or user in allowed or self.is_admin(user) or (
            REQUESTER in allowed and user == requester)

    def answers_in(self, channel: str) -> bool:
        """Whether the bot answers in this channel (direct messages always)."""
        return "*" in self.channels or channel in self.channels or channel.startswith("D")

    def deep_allowed(self, channel: str | None, fallback: tuple[str, ...]) -> tuple[str, ...]:
        """Who may choose Deep in `channel`; `fallback` (RED_DEEP_ALLOWED) without a rule."""
        return fallback if self.deep is None else self.deep.allowed_in(channel)

    def may_deep(self, user: str, channel: str | None, fallback: tuple[str, ...]) -> bool:
        allowed = self.deep_allowed(channel, fallback)
        return "*" in allowed or user in allowed

    def is_admin(self, user: str) -> bool:
        return user in self.admins


def load_policy(path: Path | None) -> Policy:
    """The policy in `path` (the defaults when None); any problem is one SettingsError line
    naming RED_POLICY_FILE and the key."""
    if path is None:
        return Policy()
    where = f"RED_POLICY_FILE {path}"
    try:
        raw = safe_yaml.load_file(path, MAX_POLICY_BYTES)
    except OSError as exc:
        raise SettingsError(f"{where}: cannot read it ({exc.strerror or exc})") from exc
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SettingsError(f"{where}: not valid YAML ({first})") from exc
    if raw is None:
        return Policy()
    if not isinstance(raw, dict):
        raise SettingsError(f"{where}: the top level must be a mapping of keys "
                            "(admins, channels, deep, caps, slack_search, steer)")
    try:
        return Policy.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(part) for part in error["loc"]) or "(top level)"
        message = error["msg"].replace("\n", " ")
        raise SettingsError(f"{where}: {key}: {message}") from exc
