"""The HTTP endpoint Slack posts events and interactions to, in front of the bolt app.

Slack signs every request: `X-Slack-Signature` is `v0=` + HMAC-SHA256 of
`v0:<X-Slack-Request-Timestamp>:<raw body>` under the signing secret. The signature is checked
here on the raw bytes, before anything parses them (bolt parses the body first and verifies
after, so an unsigned malformed body reached its parser and a 500), and only then is the body
decoded, parsed and checked for the shape bolt and the handlers read. Every refusal is a clean
4xx and one log line that never holds the body; bodies over MAX_BODY_BYTES are a 413 before
they are read in full. A request aiohttp cannot parse at all (a 100 KB header, too many
headers, a header without a colon) is its 400 before any of this runs; aiohttp logs it as a
server error with a traceback, which `ClientFaultLog` turns into one warning line.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import parse_qs

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.metrics import EVENTS_RECEIVED, REFUSED, answered, event_type
from bot.slack_fields import where
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
        """What was wrong, for a metric's label: signature, too_large or malformed."""
        return {401: "signature", 413: "too_large"}.get(self.status, "malformed")


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
    body = await request.read()  # aiohttp answers 413 past client_max_size
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
        except Refused as refused:
            REFUSED.labels(refused.kind).inc()
            log.warning("refused a request from %s: %s (HTTP %d)", request.remote,
                        refused.reason, refused.status)
            return web.json_response({"ok": False, "error": "invalid request"},
                                     status=refused.status)
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


def bolt_logger() -> logging.Logger:
    """The base logger handed to bolt: warnings and errors only (at INFO bolt logs the whole
    body of every request it refuses)."""
    logger = logging.getLogger("bot.bolt")
    logger.setLevel(logging.WARNING)
    return logger


class ClientFaultLog(logging.Filter):
    """On aiohttp's server logger: a request aiohttp could not parse (HttpProcessingError:
    oversized or malformed request line or headers) is the client's fault, not the server's;
    it becomes one warning line without the traceback and without the bytes it quoted (the
    client's headers). Any other error keeps its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            remote = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
            record.msg, record.args = "refused a request from %s: %s (HTTP %d)", (
                remote, f"unparseable request line or headers ({type(exc).__name__})",
                exc.code)
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.exc_info, record.exc_text = None, None
        return True


def quiet_client_faults(logger: logging.Logger | None = None) -> None:
    """Install `ClientFaultLog` on aiohttp's server logger (once)."""
    target = logger or logging.getLogger("aiohttp.server")
    if not any(isinstance(f, ClientFaultLog) for f in target.filters):
        target.addFilter(ClientFaultLog())


def events_app(app: AsyncApp, signing_secret: str, path: str) -> web.Application:
    """An aiohttp application serving POST `path` through `endpoint` (requests aiohttp cannot
    parse are logged as one line, `quiet_client_faults`)."""
    quiet_client_faults()
    application = web.Application(client_max_size=MAX_BODY_BYTES)
    application.router.add_post(path, endpoint(app, signing_secret))
    return application
