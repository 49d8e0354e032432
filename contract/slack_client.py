"""The Slack Web API client the bot and the workers share."""

from __future__ import annotations

from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient


def make_client(token: str, base_url: str | None = None, max_retries: int = 3) -> AsyncWebClient:
    """An AsyncWebClient that honours 429 Retry-After (and retries dropped connections)."""
    handlers = [AsyncRateLimitErrorRetryHandler(max_retry_count=max_retries),
                AsyncConnectionErrorRetryHandler()]
    if base_url is None:
        return AsyncWebClient(token=token, retry_handlers=handlers)
    return AsyncWebClient(token=token, base_url=base_url, retry_handlers=handlers)
