"""The Slack app manifest matches what the bot serves and handles: exactly the scopes, events,
command and shortcut it uses, each pointed at the bot's endpoint; and it is valid against
Slack's published manifest JSON schema (a copy in tests/slack_manifest_schema/, its source
noted in the README there)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import jsonschema
import pytest
import yaml

from bot.app import EVENTS_PATH
from bot.commands import COMMAND, SHORTCUT
from bot.surfaces import PROMPTS
from playground.fake_slack import GRANTED_SCOPES
from research_core.settings.service import OAUTH_SCOPES

MANIFEST = Path(__file__).resolve().parent.parent / "manifest.yml"
SCHEMA = Path(__file__).resolve().parent / "slack_manifest_schema" / "manifest.schema.1.0.0.json"
EVENTS = {"app_mention", "message.channels", "message.groups", "message.im",
          "assistant_thread_started", "app_home_opened"}
SCOPES = {"app_mentions:read", "chat:write", "channels:history", "groups:history",
          "im:history", "assistant:write", "commands", "files:write", "files:read",
          "canvases:write", "users:read"}


def load() -> dict[str, Any]:
    manifest: dict[str, Any] = yaml.safe_load(MANIFEST.read_text("utf-8"))
    return manifest


def test_the_manifest_points_events_and_clicks_at_the_bots_endpoint() -> None:
    settings = load()["settings"]
    assert urlparse(settings["event_subscriptions"]["request_url"]).path == EVENTS_PATH
    assert urlparse(settings["interactivity"]["request_url"]).path == EVENTS_PATH
    assert settings["interactivity"]["is_enabled"] is True
    assert set(settings["event_subscriptions"]["bot_events"]) == EVENTS
    assert set(load()["oauth_config"]["scopes"]["bot"]) == SCOPES


def test_the_command_shortcut_home_and_assistant_are_declared() -> None:
    features = load()["features"]
    [command] = features["slash_commands"]
    assert command["command"] == COMMAND and urlparse(command["url"]).path == EVENTS_PATH
    assert command["should_escape"] is True  # the text arrives as message text does
    [shortcut] = features["shortcuts"]
    assert (shortcut["type"], shortcut["callback_id"]) == ("message", SHORTCUT)
    assert features["app_home"]["home_tab_enabled"] is True
    assert features["app_home"]["messages_tab_enabled"] is True


def test_the_scopes_asked_for_checked_and_granted_are_the_manifests() -> None:
    """The OAuth flow asks for (and `redsearch doctor` checks) the manifest's bot scopes, and
    the fake Slack grants exactly those."""
    manifest = set(load()["oauth_config"]["scopes"]["bot"])
    assert set(OAUTH_SCOPES.split(",")) == manifest
    assert set(GRANTED_SCOPES) == manifest


def test_the_agent_view_is_declared_with_the_bots_suggested_prompts() -> None:
    features = load()["features"]
    assert "assistant_view" not in features  # Slack gives new apps the agent view only
    agent = features["agent_view"]
    assert agent["agent_description"]
    assert agent["suggested_prompts"] == PROMPTS  # the same the assistant container offers
    assert 1 <= len(PROMPTS) <= 4


def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA.read_text("utf-8"))
    return loaded


def test_the_manifest_is_valid_against_slacks_published_schema() -> None:
    jsonschema.Draft7Validator.check_schema(schema())
    jsonschema.validate(load(), schema())


@pytest.mark.parametrize("change", [
    lambda m: m["features"]["agent_view"].update(agent_description="x" * 301),
    lambda m: m["features"]["agent_view"]["suggested_prompts"].extend(
        [{"title": "t", "message": "m"}] * 3),
    lambda m: m["features"]["agent_view"].update(greeting="hi"),
    lambda m: m["features"]["app_home"].update(messages_tab=True),
])
def test_the_schema_copy_refuses_what_slack_refuses(change: Any) -> None:
    """The copy is the real schema, not a stand-in that takes anything."""
    manifest = load()
    change(manifest)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(manifest, schema())
