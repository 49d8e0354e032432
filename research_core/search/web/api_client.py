"""JSON over HTTP for the search APIs: a shared rate limit per backend, 429 / 503 answered by
waiting `Retry-After` (else exponential back-off), and one `BackendFailed` for every way a
call can fail, so that the chain moves on to the next backend."""

from __future__ import annotations

import asyncio
import datetime as dt
import email.utils
from dataclasses import dataclass
from typing import Any

import aiohttp

from research_core.protocols import RateLimiter

RETRY_STATUSES = frozenset({429, 502, 503, 504})


# What kind of failure a BackendFailed is (a metric's label: a small fixed set).
FAILURE_KINDS = ("timeout", "ratelimited", "server_error", "http_error", "network",
                 "invalid_response")


class BackendFailed(Exception):
    """A search backend did not answer usefully; `reason` is short, e.g. "429" or "timeout";
    `kind` one of FAILURE_KINDS."""

    def __init__(self, backend: str, reason: str, kind: str = "invalid_response") -> None:
        super().__init__(f"{backend} failed ({reason})")
        self.backend = backend
        self.reason = reason
        self.kind = kind


def status_kind(status: int) -> str:
    """The failure kind of an HTTP status other than 200."""
    if status == 429:
        return "ratelimited"
    return "server_error" if status >= 500 else "http_error"


def retry_after_s(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - dt.datetime.now(dt.UTC)).total_seconds())


@dataclass(frozen=True)
class _Answer:
    status: int
    retry_after: float | None
    payload: Any


@dataclass
class ApiClient:
    name: str
    limiter: RateLimiter
    timeout_s: float = 15.0
    retries: int = 2
    max_wait_s: float = 30.0
    backoff_s: float = 0.5

    async def get_json(self, url: str, params: dict[str, str],
                       headers: dict[str, str] | None = None) -> Any:
        return await self._call("GET", url, headers or {}, params=params)

    async def post_json(self, url: str, body: dict[str, Any],
                        headers: dict[str, str] | None = None) -> Any:
        return await self._call("POST", url, headers or {}, json=body)

    async def _call(self, method: str, url: str, headers: dict[str, str],
                    **kwargs: Any) -> Any:
        for attempt in range(self.retries + 1):
            await self.limiter.acquire(self.name)
            answer = await self._once(method, url, headers, **kwargs)
            if answer.status == 200:
                return answer.payload
            if answer.status not in RETRY_STATUSES:
                raise BackendFailed(self.name, f"HTTP {answer.status}",
                                    status_kind(answer.status))
            wait = answer.retry_after
            wait = self.backoff_s * 2 ** attempt if wait is None else wait
            if attempt == self.retries or wait > self.max_wait_s:
                raise BackendFailed(self.name, str(answer.status), status_kind(answer.status))
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")

    async def _once(self, method: str, url: str, headers: dict[str, str],
                    **kwargs: Any) -> _Answer:
        timeout = aiohttp.ClientTimeout(total=self.timeout_s)
        headers = {"Accept": "application/json", **headers}
        try:
            async with (aiohttp.ClientSession(trust_env=False, timeout=timeout) as session,
                        session.request(method, url, headers=headers, **kwargs) as resp):
                later = retry_after_s(resp.headers.get("Retry-After"))
                if resp.status != 200:
                    return _Answer(resp.status, later, None)
                return _Answer(200, later, await resp.json(content_type=None))
        except TimeoutError as exc:
            raise BackendFailed(self.name, "timeout", "timeout") from exc
        except aiohttp.ClientError as exc:
            raise BackendFailed(self.name, type(exc).__name__, "network") from exc
        except ValueError as exc:
            raise BackendFailed(self.name, "invalid JSON") from exc
