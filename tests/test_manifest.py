"""The Slack app manifest matches what the bot serves and handles."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import yaml

from bot.app import EVENTS_PATH

MANIFEST = Path(__file__).resolve().parent.parent / "manifest.yml"


def test_the_manifest_points_events_and_clicks_at_the_bots_endpoint() -> None:
    manifest = yaml.safe_load(MANIFEST.read_text("utf-8"))
    settings = manifest["settings"]
    assert urlparse(settings["event_subscriptions"]["request_url"]).path == EVENTS_PATH
    assert urlparse(settings["interactivity"]["request_url"]).path == EVENTS_PATH
    assert settings["interactivity"]["is_enabled"] is True
    events = set(settings["event_subscriptions"]["bot_events"])
    assert events == {"app_mention", "message.channels", "message.groups"}
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    assert scopes == {"app_mentions:read", "chat:write", "channels:history", "groups:history"}
