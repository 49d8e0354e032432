"""The HTTP endpoint Slack posts events and interactions to, in front of the bolt app.

Slack signs every request: `X-Slack-Signature` is `v0=` + HMAC-SHA256 of
`v0:<X-Slack-Request-Timestamp>:<raw body>` under the signing secret. The signature is checked
here on the raw bytes, before anything parses them (bolt parses the body first and verifies
after, so an unsigned malformed body reached its parser and a 500), and only then is the body
decoded, parsed and checked for the shape bolt and the handlers read. Every refusal is a clean
4xx, one log line that never holds the body and one count in
`redsearch_slack_requests_refused_total`; bodies over MAX_BODY_BYTES are a 413 before they are
read in full. A request aiohttp cannot parse at all (a 100 KB header, too many headers, a
header without a colon, a broken chunked body, bytes that are not HTTP) is its 400 before any
of this runs; aiohttp logs it as a server error with a traceback, which `ClientFaultLog` turns
into one warning line and counts; a path or method not served (404, 405) is counted by
`refusals_counted`.

A signed request is acted on once: anyone who saw one (a proxy's log, say) could post the same
bytes again while its timestamp is within MAX_CLOCK_SKEW_S, and Slack's signature would still
hold. `DropReplays` keeps a digest of each signed command's or interaction's timestamp and body
in Redis for as long as that request would be accepted (an event is known by its event id); a
repeat is acknowledged (HTTP 200), handed to no listener, and counted as a duplicate delivery.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import parse_qs

import aiohttp
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError, LineTooLong
from redis.asyncio import Redis
from redis.exceptions import RedisError
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from bot.metrics import DUPLICATES, EVENTS_RECEIVED, REFUSED, answered, event_type
from bot.slack_fields import event_id_usable, where
from contract.keys import signed_key
from contract.slack_client import slack_error
from research_core import log_context

log = logging.getLogger("bot.http")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

MAX_BODY_BYTES = 1024 * 1024
MAX_CLOCK_SKEW_S = 300  # Slack's own advice: refuse requests older than five minutes
TIMESTAMP_DIGITS = 12

# Keys whose value bolt's context extraction and our handlers read as an object (or an id).
_OBJECTS = ("event", "message", "previous_message", "view", "item", "assistant_thread",
            "function_data", "container", "state")
_IDS_OR_OBJECTS = ("team", "enterprise", "user", "channel")
_LISTS_OF_OBJECTS = ("authorizations", "response_urls", "actions")
# Interactions (clicks, shortcuts, modals): Slack always names the person as an object
# (`{"id": …}`); a bare id there is not Slack's and must not pass for anyone's click.
_INTERACTIONS = frozenset({"block_actions", "block_suggestion", "view_submission",
                           "view_closed", "shortcut", "message_action",
                           "interactive_message", "dialog_submission"})


class Refused(Exception):
    """A request the endpoint answers with `status` and logs as `reason` (never the body)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason

    @property
    def kind(self) -> str:
        """What was wrong, for a metric's label (`refusal_kind`)."""
        return refusal_kind(self.status)


def refusal_kind(status: int) -> str:
    """A refusal's label: signature (401), too_large (413, 431), not_found (404), method (405)
    or malformed (any other 4xx)."""
    return {401: "signature", 413: "too_large", 431: "too_large", 404: "not_found",
            405: "method"}.get(status, "malformed")


def refused(remote: str | None, reason: str, status: int) -> None:
    """A refusal counted (`redsearch_slack_requests_refused_total`) and logged in one line,
    never with the request's bytes."""
    REFUSED.labels(refusal_kind(status)).inc()
    log.warning("refused a request from %s: %s (HTTP %d)", remote or "?", reason, status)


def signature_valid(secret: str, timestamp: str | None, signature: str | None, body: bytes,
                    now: float | None = None) -> bool:
    """Slack's v0 request signature, checked on the raw body; a timestamp that is not whole
    seconds within MAX_CLOCK_SKEW_S of `now` fails (no parsing that could raise), and so
    does every request when there is no secret (Socket Mode only: nothing may come over HTTP)."""
    if not secret or not timestamp or not signature or not signature.isascii():
        return False
    if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= TIMESTAMP_DIGITS):
        return False
    if abs((time.time() if now is None else now) - int(timestamp)) > MAX_CLOCK_SKEW_S:
        return False
    base = b"v0:" + timestamp.encode("ascii") + b":" + body
    expected = "v0=" + hmac.new(secret.encode("utf-8"), base, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode("ascii"), signature.encode("ascii"))


def _shape_problem(payload: dict[str, Any], depth: int = 0) -> str | None:
    """Why a parsed payload does not have the shape Slack sends, or None."""
    if "type" in payload and not isinstance(payload["type"], str):
        return "its type is not a string"
    for key in _OBJECTS:
        if key in payload and payload[key] is not None and not isinstance(payload[key], dict):
            return f"{key} is not an object"
    for key in _IDS_OR_OBJECTS:
        if key in payload and not isinstance(payload[key], str | dict | None):
            return f"{key} is neither an id nor an object"
    for key in _LISTS_OF_OBJECTS:
        value = payload.get(key)
        if key in payload and not (isinstance(value, list)
                                   and all(isinstance(v, dict) for v in value)):
            return f"{key} is not a list of objects"
    if payload.get("type") == "block_actions" and not payload.get("actions"):
        return "a block action without actions"
    if depth == 0 and payload.get("type") in _INTERACTIONS \
            and not isinstance(payload.get("user"), dict):
        return "an interaction whose user is not an object"
    nested = (payload.get(k) for k in ("event", "message", "previous_message"))
    for inner in (n for n in nested if isinstance(n, dict) and depth < 2):
        problem = _shape_problem(inner, depth + 1)
        if problem:
            return problem
    return None


def parse_payload(body: bytes, content_type: str) -> dict[str, Any]:
    """The body as bolt will read it (JSON, or a form whose `payload` field is JSON, or a
    plain form); Refused(400) when it is not UTF-8, not parseable or not an object."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(400, "body is not UTF-8") from exc
    if content_type == "application/json" or text.startswith("{"):
        return _json_object(text, "body")
    form = parse_qs(text, keep_blank_values=True)
    if "payload" in form:
        payload = form.get("payload") or []
        if len(payload) != 1:
            raise Refused(400, "form without exactly one payload field")
        return _json_object(payload[0], "payload")
    return {k: v[-1] for k, v in form.items()}


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
        raise Refused(400, f"{what} is not valid JSON ({type(exc).__name__})") from exc
    if not isinstance(value, dict):
        raise Refused(400, f"{what} is JSON but not an object")
    problem = _shape_problem(value)
    if problem:
        raise Refused(400, f"{what}: {problem}")
    return value


async def _checked_body(request: web.Request,
                        signing_secret: str) -> tuple[bytes, dict[str, Any]]:
    """The raw body, verified, and what it holds."""
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        raise Refused(413, f"body of {request.content_length} bytes")
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge as exc:  # a chunked body past client_max_size
        raise Refused(413, f"body over {MAX_BODY_BYTES} bytes") from exc
    headers = request.headers
    if not signature_valid(signing_secret, headers.get("X-Slack-Request-Timestamp"),
                           headers.get("X-Slack-Signature"), body):
        raise Refused(401, "missing, stale or invalid signature")
    return body, parse_payload(body, request.content_type)


def bolt_form(body: bytes, content_type: str) -> bytes | None:
    """The body to hand bolt in place of a form that mentions "payload" without being an
    interaction: bolt reads any form whose text contains that word as a `payload` field (and
    so a slash command asking about payloads as nothing at all). The word is percent-encoded,
    which decodes to the same form. None when the body needs no change."""
    text = body.decode("utf-8")
    if content_type == "application/json" or text.startswith("{") or "payload" not in text:
        return None
    if "payload" in parse_qs(text, keep_blank_values=True):
        return None
    return text.replace("payload", "%70ayload").encode("utf-8")


def _signed_again(headers: dict[str, str | Sequence[str]], body: bytes,
                  secret: str) -> dict[str, str | Sequence[str]]:
    """Headers for a verified body rewritten by `bolt_form` (bolt checks the signature too)."""
    lower = {k.lower(): v for k, v in headers.items()}
    timestamp = str(lower.get("x-slack-request-timestamp", ""))
    base = b"v0:" + timestamp.encode("ascii") + b":" + body
    digest = hmac.new(secret.encode("utf-8"), base, hashlib.sha256).hexdigest()
    kept = {k: v for k, v in headers.items() if k.lower() != "x-slack-signature"}
    return {**kept, "X-Slack-Signature": "v0=" + digest}


def endpoint(app: AsyncApp, signing_secret: str) -> Handler:
    """The aiohttp handler: verify, parse, check, then let bolt dispatch."""

    async def handle(request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        try:
            body, payload = await _checked_body(request, signing_secret)
            bolt_request = _bolt_request(request, body, signing_secret)
        except Refused as refusal:
            refused(request.remote, refusal.reason, refusal.status)
            return web.json_response({"ok": False, "error": "invalid request"},
                                     status=refusal.status)
        kind = event_type(payload)
        EVENTS_RECEIVED.labels(kind).inc()
        team, channel = where(payload)
        with log_context.bound(team=team, channel=channel):  # its listeners' lines too
            response = await to_aiohttp_response(await app.async_dispatch(bolt_request))
        answered(kind, response.status, started)
        return response

    return handle


def _bolt_request(request: web.Request, body: bytes, secret: str) -> AsyncBoltRequest:
    """Bolt's request of a verified body; bolt reads ids from the payload while building it,
    so a signed payload of a shape it cannot read is refused here, not answered with a 500."""
    headers: dict[str, str | Sequence[str]] = dict(request.headers)
    rewritten = bolt_form(body, request.content_type)
    if rewritten is not None:
        body, headers = rewritten, _signed_again(headers, rewritten, secret)
    try:
        return AsyncBoltRequest(body=body.decode("utf-8"), query=request.query_string,
                                headers=headers)
    except (TypeError, AttributeError, KeyError, IndexError, ValueError) as exc:
        raise Refused(400, f"payload bolt cannot read ({type(exc).__name__})") from exc


def replay_key(timestamp: str, body: str) -> str:
    """The Redis key of a signed request: a digest of what its signature covers."""
    digest = hashlib.sha256(f"{timestamp}:{body}".encode("utf-8", "surrogatepass"))
    return signed_key(digest.hexdigest()[:40])


def _header(req: AsyncBoltRequest, name: str) -> str | None:
    values = req.headers.get(name)
    return values[0] if values else None


class DropReplays(AsyncMiddleware):
    """Bolt's first middleware of ours: a signed command or interaction (HTTP; Socket Mode's
    carry no signature) whose timestamp and body were handled already is answered 200 and
    goes no further. Its key lives until the request's timestamp leaves the window that
    `signature_valid` accepts, so any repeat it lets through finds it. An event has a key of
    its own in what is signed, its event id: the handlers that act on one drop a repeat by it
    after the ack (`Starter.first_delivery`, kept an hour), so an event's ack waits for no
    Redis here. When Redis does not answer, the request is handled (one warning line): its
    listeners need Redis too."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    async def async_process(self, *, req: AsyncBoltRequest, resp: BoltResponse,
                            next: Callable[[], Awaitable[BoltResponse]]) -> BoltResponse | None:
        timestamp = _header(req, "x-slack-request-timestamp")
        if timestamp is None or not timestamp.isdigit() or _has_event_id(req.body):
            return await next()
        keep_s = max(int(timestamp) + MAX_CLOCK_SKEW_S + 1 - int(time.time()), 1)
        try:
            first = await self.redis.set(replay_key(timestamp, req.raw_body), 1, nx=True,
                                         ex=keep_s)
        except (RedisError, OSError) as exc:
            log.warning("a %s request not checked for a repeat: Redis unavailable (%s)",
                        event_type(req.body), type(exc).__name__)
            return await next()
        if first:
            return await next()
        DUPLICATES.inc()
        log.info("dropped a repeated %s request (its signed body was handled already)",
                 event_type(req.body))
        return BoltResponse(status=200, body="")


def _has_event_id(payload: dict[str, Any]) -> bool:
    """An event callback with an event id the handlers can mark (`event_id_usable`)."""
    return payload.get("type") == "event_callback" and bool(payload.get("event_id")) \
        and event_id_usable(payload)


def bolt_logger() -> logging.Logger:
    """The base logger handed to bolt: warnings and errors only (at INFO bolt logs the whole
    body of every request it refuses)."""
    logger = logging.getLogger("bot.bolt")
    logger.setLevel(logging.WARNING)
    return logger


class ClientFaultLog(logging.Filter):
    """On aiohttp's server logger: a request aiohttp could not parse (HttpProcessingError:
    oversized or malformed request line or headers, a broken chunked body, bytes that are not
    HTTP at all) is the client's fault, not the server's; it is counted as a refusal and
    becomes one warning line without the traceback and without the bytes it quoted (the
    client's headers). Any other error keeps its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            remote = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
            too_long = isinstance(exc, LineTooLong) or "too many headers" in str(exc).lower()
            REFUSED.labels("too_large" if too_long else "malformed").inc()
            record.msg, record.args = "refused a request from %s: %s (HTTP %d)", (
                remote, f"unparseable request line, headers or body ({type(exc).__name__})",
                exc.code)
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.exc_info, record.exc_text = None, None
        return True


def quiet_client_faults(logger: logging.Logger | None = None) -> None:
    """Install `ClientFaultLog` on aiohttp's server logger (once). The logger takes DEBUG
    records: aiohttp logs bytes that are not HTTP (a TLS handshake, say) at DEBUG, and those
    are refusals to count and tell too."""
    target = logger or logging.getLogger("aiohttp.server")
    if not any(isinstance(f, ClientFaultLog) for f in target.filters):
        target.addFilter(ClientFaultLog())
        target.setLevel(logging.DEBUG)


class SocketModeLog(logging.Filter):
    """On the Socket Mode client's logger: slack_sdk logs a failed connection with its whole
    traceback (and the failed apps.connections.open call once more, over two lines), again at
    every retry. Each failure becomes one line saying what failed and why ("Socket Mode:
    failed to connect (invalid_auth); trying again"); the cause is `slack_error`'s short code
    (a Slack error, an HTTP status, a connection that failed)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith("Failed to retrieve WSS URL"):
            return False  # "Failed to connect" follows, with the same cause
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None and "\n" not in message:
            return True
        what = re.split(r" \(error:|:", message, maxsplit=1)[0].strip()
        cause = slack_error(exc) if exc is not None else _first_line(message[len(what):])
        again = "; trying again" if message.rstrip().endswith("Retrying...") else ""
        record.msg, record.args = "Socket Mode: %s (%s)%s", (
            what[:1].lower() + what[1:80], cause, again)
        record.exc_info, record.exc_text = None, None
        return True


def _first_line(text: str) -> str:
    return " ".join(text.strip(" :").split("\n", 1)[0].split())[:200]


def socket_mode_logger() -> logging.Logger:
    """The logger handed to the Socket Mode client: its failures in one line each
    (`SocketModeLog`)."""
    logger = logging.getLogger("bot.socket_mode")
    if not any(isinstance(f, SocketModeLog) for f in logger.filters):
        logger.addFilter(SocketModeLog())
    return logger


@web.middleware
async def refusals_counted(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refusals aiohttp raises before or around a handler (no such path: 404; not POST:
    405; any other 4xx a route raises) are counted and logged in one line like the
    endpoint's own."""
    try:
        return await handler(request)
    except web.HTTPClientError as exc:
        refused(request.remote, f"{exc.reason} ({request.method[:16]})", exc.status)
        raise


def web_api_session(app: AsyncApp) -> Callable[[web.Application], AsyncIterator[None]]:
    """While the application runs, the bot's Web API calls share one HTTP session (its
    connections kept open): without one, slack_sdk opens a session, a TCP connection and
    closes both for every call. Bolt's per-request clients take the app client's session."""

    async def shared(application: web.Application) -> AsyncIterator[None]:
        client = app.client
        if client.session is not None:  # the caller's own
            yield
            return
        client.session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=client.timeout),
            trust_env=client.trust_env_in_session)
        try:
            yield
        finally:
            session, client.session = client.session, None
            await session.close()

    return shared


def events_app(app: AsyncApp, signing_secret: str, path: str) -> web.Application:
    """An aiohttp application serving POST `path` through `endpoint` (requests aiohttp cannot
    parse are logged as one line, `quiet_client_faults`); the app's Web API calls share one
    session while it runs (`web_api_session`)."""
    quiet_client_faults()
    application = web.Application(client_max_size=MAX_BODY_BYTES,
                                  middlewares=[refusals_counted])
    application.router.add_post(path, endpoint(app, signing_secret))
    application.cleanup_ctx.append(web_api_session(app))
    return application
