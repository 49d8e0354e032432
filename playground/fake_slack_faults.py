"""What a Web API method can answer when Slack (or a proxy in front of it) misbehaves, for
fault injection into the fake (`FakeSlack.fault`): the answers a client must survive.

- `html-502`: a proxy's HTML error page with HTTP 502 (Slack incidents look like this);
- `text-405`: HTTP 405 with a plain-text body (a stand-in that answers reads only by POST);
- `empty-200`: HTTP 200 with an empty JSON body;
- `truncated-json`: HTTP 200 whose JSON body ends halfway;
- `reset`: the connection dropped before any answer.
"""

from __future__ import annotations

from aiohttp import web

FAULTS = ("html-502", "text-405", "empty-200", "truncated-json", "reset")
STATUS = {"html-502": 502, "text-405": 405, "empty-200": 200, "truncated-json": 200,
          "reset": 0}
_BODIES = {
    "html-502": ("<html><head><title>502 Bad Gateway</title></head><body><center>"
                 "<h1>502 Bad Gateway</h1></center></body></html>", "text/html"),
    "text-405": ("405: Method Not Allowed", "text/plain"),
    "empty-200": ("", "application/json"),
    "truncated-json": ('{"ok": true, "channel": "C0", "ts": "17123', "application/json"),
}


def faulted(request: web.Request, kind: str) -> web.StreamResponse:
    """The answer of fault `kind` (a `reset` aborts the connection: nothing is answered)."""
    if kind == "reset":
        if request.transport is not None:
            request.transport.abort()
        return web.Response(status=204)  # never written: the connection is gone
    text, content_type = _BODIES[kind]
    return web.Response(status=STATUS[kind], text=text, content_type=content_type)
