"""The workspaces the app is installed in (many-workspace mode, docs/workspaces.md): slack-sdk's
SQLAlchemy installation store on the project's database. The bot's OAuth flow writes it; bolt
authorizes each request from it, and the workers find each team's bot token in it."""

from __future__ import annotations

from slack_sdk.oauth.installation_store.sqlalchemy import AsyncSQLAlchemyInstallationStore
from slack_sdk.web.async_client import AsyncWebClient
from sqlalchemy.ext.asyncio import AsyncEngine

from contract.slack_client import make_client


class NotInstalled(Exception):
    """No installation (bot token) for a team."""


async def installation_store(client_id: str,
                             engine: AsyncEngine) -> AsyncSQLAlchemyInstallationStore:
    """The installation store on `engine`, its tables created."""
    store = AsyncSQLAlchemyInstallationStore(client_id=client_id, engine=engine)
    await store.create_tables()  # type: ignore[no-untyped-call]  # untyped in slack-sdk
    return store


async def team_client(store: AsyncSQLAlchemyInstallationStore, team: str,
                      api_url: str) -> AsyncWebClient:
    """A Web API client with the bot token `team` installed the app with (looked up each time:
    a reinstall replaces the token)."""
    bot = await store.async_find_bot(enterprise_id=None, team_id=team)
    if bot is None or not bot.bot_token:
        raise NotInstalled(f"the app is not installed in workspace {team}")
    return make_client(bot.bot_token, api_url)
