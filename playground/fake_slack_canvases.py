"""Canvases in the fake, as Slack's Web API keeps them: canvases.create (an optional `title`,
`document_content` `{"type": "markdown", "markdown": …}` of at most 1 MiB, an optional
`channel_id` that tabs it in that channel), canvases.edit (`changes`: `replace` of the whole
document, or `insert_at_end` / `insert_at_start`), canvases.access.set (`access_level` read or
write for `channel_ids` / `user_ids`, comma-separated) and canvases.delete. Each needs the
`canvases:write` scope (else `missing_scope` with `needed` and `provided`, as Slack answers).

`free_team` stands for a workspace on Slack's free plan: a canvas must be a channel's tab
(`free_teams_cannot_create_non_tabbed_canvases`) and a channel has one at most
(`free_team_canvas_tab_already_exists`). A canvas is a file: files.info describes it
(`fake_slack_files`), and the playground shows it at `/canvases/<id>` (its markdown at
`/canvases/<id>.json`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from aiohttp import web

from playground.fake_slack_messages import JSON, SlackError, json_argument

if TYPE_CHECKING:
    from playground.fake_slack import FakeSlack

SCOPE = "canvases:write"
MARKDOWN_CHARS = 1_048_576
TITLE_CHARS = 255
ACCESS_LEVELS = ("read", "write")
CANVAS_PATH = "/canvases/{canvas_id}"
CANVAS_JSON_PATH = "/canvases/{canvas_id}.json"
PAGE = Path(__file__).parent / "static" / "canvas.html"


@dataclass
class Canvas:
    id: str
    title: str
    markdown: str
    channel: str = ""  # the channel it is a tab of
    access: dict[str, str] = field(default_factory=dict)  # channel or user id -> level
    edits: int = 0
    deleted: bool = False

    def to_dict(self, base: str) -> JSON:
        """As files.info describes a canvas."""
        return {"id": self.id, "name": self.title, "title": self.title, "filetype": "quip",
                "pretty_type": "Canvas", "mimetype": "application/vnd.slack-docs",
                "size": len(self.markdown.encode()), "url_private": f"{base}/canvases/{self.id}",
                "permalink": f"{base}/canvases/{self.id}",
                "channels": [c for c in self.access if c[:1] in "CGD"]
                + ([self.channel] if self.channel else [])}


class FakeCanvases:
    def __init__(self, fake: FakeSlack, free_team: bool = False) -> None:
        self.fake = fake
        self.free_team = free_team
        self.canvases: dict[str, Canvas] = {}
        for method, handler in {
            "canvases.create": self.create, "canvases.edit": self.edit,
            "canvases.access.set": self.access_set, "canvases.delete": self.delete,
        }.items():
            fake.add_method(method, handler)

    def routes(self, app: web.Application) -> None:
        """The canvas page and its content, for the browser."""
        app.router.add_get(CANVAS_JSON_PATH, self.serve)
        app.router.add_get(CANVAS_PATH, self.page)

    async def page(self, request: web.Request) -> web.FileResponse:
        return web.FileResponse(PAGE)

    def live(self) -> list[Canvas]:
        return [c for c in self.canvases.values() if not c.deleted]

    def found(self, canvas_id: object) -> Canvas | None:
        canvas = self.canvases.get(str(canvas_id or ""))
        return None if canvas is None or canvas.deleted else canvas

    def create(self, params: JSON) -> JSON:
        self._scoped()
        title = str(params.get("title") or "")
        if len(title) > TITLE_CHARS:
            raise SlackError("invalid_arguments", f"title: at most {TITLE_CHARS} characters")
        markdown = _markdown(params.get("document_content"))
        channel = str(params.get("channel_id") or "")
        self._tab_allowed(channel)
        canvas_id = f"F0CANVAS{len(self.canvases) + 1:04d}"
        self.canvases[canvas_id] = Canvas(canvas_id, title or "Untitled", markdown, channel)
        return {"canvas_id": canvas_id}

    def _tab_allowed(self, channel: str) -> None:
        if not self.free_team:
            return
        if not channel:
            raise SlackError("free_teams_cannot_create_non_tabbed_canvases")
        if any(c.channel == channel for c in self.live()):
            raise SlackError("free_team_canvas_tab_already_exists")

    def edit(self, params: JSON) -> JSON:
        self._scoped()
        canvas = self._canvas(params)
        changes = json_argument(params.get("changes"), "changes")
        if not isinstance(changes, list) or not changes:
            raise SlackError("invalid_arguments", "changes: a list of one change or more")
        for change in changes:
            canvas.markdown = _changed(canvas.markdown, change)
        canvas.edits += 1
        return {}

    def access_set(self, params: JSON) -> JSON:
        self._scoped()
        canvas = self._canvas(params)
        level = str(params.get("access_level") or "")
        if level not in ACCESS_LEVELS:
            raise SlackError("invalid_arguments", "access_level: read or write")
        ids = [*_ids(params.get("channel_ids")), *_ids(params.get("user_ids"))]
        if not ids:
            raise SlackError("invalid_arguments", "channel_ids or user_ids is required")
        canvas.access.update(dict.fromkeys(ids, level))
        return {}

    def delete(self, params: JSON) -> JSON:
        self._scoped()
        self._canvas(params).deleted = True
        return {}

    def _canvas(self, params: JSON) -> Canvas:
        canvas = self.found(params.get("canvas_id"))
        if canvas is None:
            raise SlackError("canvas_not_found")
        return canvas

    def _scoped(self) -> None:
        if SCOPE not in self.fake.scopes:
            raise SlackError("missing_scope", needed=SCOPE, provided=",".join(self.fake.scopes))

    async def serve(self, request: web.Request) -> web.Response:
        canvas = self.found(request.match_info["canvas_id"])
        if canvas is None:
            return web.json_response({"error": "canvas_not_found"}, status=404)
        return web.json_response({"id": canvas.id, "title": canvas.title,
                                  "markdown": canvas.markdown})


def _markdown(content: object) -> str:
    """The markdown of a `document_content` (Slack takes only type markdown)."""
    parsed = json_argument(content, "document_content") if content not in (None, "") else {}
    if not isinstance(parsed, dict) or (parsed and parsed.get("type") != "markdown"):
        raise SlackError("invalid_arguments", "document_content: type must be markdown")
    markdown = parsed.get("markdown", "")
    if not isinstance(markdown, str) or len(markdown) > MARKDOWN_CHARS:
        raise SlackError("invalid_arguments", f"markdown: text of at most {MARKDOWN_CHARS}")
    return markdown


def _changed(markdown: str, change: object) -> str:
    if not isinstance(change, dict) or change.get("section_id"):
        raise SlackError("invalid_arguments", "the fake edits whole documents only")
    new = _markdown(change.get("document_content"))
    operation = change.get("operation")
    if operation == "replace":
        return new
    if operation == "insert_at_end":
        return markdown + "\n" + new
    if operation == "insert_at_start":
        return new + "\n" + markdown
    raise SlackError("invalid_arguments", f"unknown operation {json.dumps(operation)}")


def _ids(value: object) -> list[str]:
    """channel_ids / user_ids: comma-separated (slack_sdk joins a list) or a JSON list."""
    if isinstance(value, list):
        return [str(v) for v in value if v]
    return [v.strip() for v in str(value or "").split(",") if v.strip()]
