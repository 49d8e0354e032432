"""Many workspaces (docs/workspaces.md): the app is installed into each with Slack's OAuth
flow — `GET /slack/install` sends a person to Slack's consent page with a fresh state (kept
in the database and in a cookie), `GET /slack/oauth_redirect` exchanges the code for that
workspace's bot token (`oauth.v2.access`) and stores the installation. slack-bolt's own
OAuth flow does the work, on slack-sdk's SQLAlchemy installation and state stores in the
project's database; bolt then authorizes every event and click with its team's token, and
the workers look the same token up by team (`workers.services.Services.for_team`).
Without SLACK_CLIENT_ID and SLACK_CLIENT_SECRET nothing here is used: one workspace, one
SLACK_BOT_TOKEN."""

from __future__ import annotations

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_sdk.oauth.state_store.sqlalchemy import AsyncSQLAlchemyOAuthStateStore
from sqlalchemy.ext.asyncio import AsyncEngine

from contract.installations import installation_store
from research_core.settings.service import SlackSettings

INSTALL_PATH = "/slack/install"
REDIRECT_PATH = "/slack/oauth_redirect"
STATE_EXPIRY_S = 600  # a consent page left open longer must start the install again


async def oauth_settings(slack: SlackSettings, engine: AsyncEngine) -> AsyncOAuthSettings:
    """bolt's OAuth settings: the client, the bot scopes, both stores on `engine`."""
    states = AsyncSQLAlchemyOAuthStateStore(expiration_seconds=STATE_EXPIRY_S, engine=engine)
    await states.create_tables()  # type: ignore[no-untyped-call]  # untyped in slack-sdk
    return AsyncOAuthSettings(
        client_id=slack.client_id, client_secret=slack.client_secret,
        scopes=[s.strip() for s in slack.scopes.split(",") if s.strip()],
        installation_store=await installation_store(slack.client_id, engine),
        state_store=states, install_path=INSTALL_PATH, redirect_uri_path=REDIRECT_PATH,
        install_page_rendering_enabled=False)


def add_oauth_routes(application: web.Application, app: AsyncApp) -> None:
    """GET the install and redirect paths, when the app has an OAuth flow."""
    flow = app.oauth_flow
    if flow is None:
        return

    async def install(request: web.Request) -> web.StreamResponse:
        return await to_aiohttp_response(
            await flow.handle_installation(await to_bolt_request(request)))

    async def redirect(request: web.Request) -> web.StreamResponse:
        return await to_aiohttp_response(
            await flow.handle_callback(await to_bolt_request(request)))

    application.router.add_get(INSTALL_PATH, install)
    application.router.add_get(REDIRECT_PATH, redirect)
