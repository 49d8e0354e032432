"""Files in the fake, as slack_sdk's `files_upload_v2` uploads them: files.getUploadURLExternal
(a file id and an upload URL for `filename` and `length` bytes, an optional `alt_txt`), the
upload itself (a POST of the bytes to that URL, served at `/upload/v1/<file id>`: exactly the
length announced, at most `max_bytes`), then files.completeUploadExternal (the uploaded ids,
each with a title; shared in `channel_id` / `thread_ts` when given, else kept private to the
app; a shared file that is no image is in its message's `files`, as Slack shows an upload).
files.delete removes one, files.info (scope `files:read`) describes one, or a canvas
(`fake_slack_canvases`). A message's `image` block may show a
file through `slack_file` (`{"id": …}`): only a completed image file the app can see
(`check_images`, else `invalid_blocks`, as Slack answers "downloading image failed"). The
playground serves a file's bytes at `/files/<file id>` (text as UTF-8 text, for the browser).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from playground.fake_slack_messages import JSON, Message, SlackError, json_argument

if TYPE_CHECKING:
    from playground.fake_slack import FakeSlack

MAX_BYTES = 1024**3  # Slack's limit for a file: 1 GB
ALT_TEXT_CHARS = 1_000  # alt_txt of files.getUploadURLExternal
TITLE_CHARS = 255
FILES_PER_CALL = 100
FILENAME_CHARS = 255
PNG = b"\x89PNG\r\n\x1a\n"
UPLOAD_PATH = "/upload/v1/{file_id}"
FILES_PATH = "/files/{file_id}"
BINARY = "application/octet-stream"
TEXT_TYPES = {"md": "text/markdown", "txt": "text/plain", "csv": "text/csv"}
READ_SCOPE = "files:read"


@dataclass
class StoredFile:
    id: str
    filename: str
    length: int
    alt_txt: str = ""
    title: str = ""
    content: bytes | None = None
    completed: bool = False
    deleted: bool = False

    @property
    def is_image(self) -> bool:
        return bool(self.content and self.content.startswith(PNG))

    @property
    def mimetype(self) -> str:
        if self.is_image:
            return "image/png"
        return TEXT_TYPES.get(self.filename.rsplit(".", 1)[-1].lower(), BINARY)

    def to_dict(self, base: str) -> JSON:
        kind = self.filename.rsplit(".", 1)[-1].lower() if self.mimetype != BINARY else "binary"
        return {"id": self.id, "name": self.filename, "title": self.title or self.filename,
                "mimetype": self.mimetype, "filetype": "png" if self.is_image else kind,
                "size": self.length,
                "alt_txt": self.alt_txt, "url_private": f"{base}/files/{self.id}",
                "permalink": f"{base}/files/{self.id}"}


class FakeFiles:
    def __init__(self, fake: FakeSlack, max_bytes: int = MAX_BYTES) -> None:
        self.fake = fake
        self.max_bytes = max_bytes
        self.files: dict[str, StoredFile] = {}
        for method, handler in {
            "files.getUploadURLExternal": self.upload_url,
            "files.completeUploadExternal": self.complete, "files.delete": self.delete,
            "files.info": self.info,
        }.items():
            fake.add_method(method, handler)

    def routes(self, app: web.Application) -> None:
        """The upload URL and the files' bytes, on the fake's server."""
        app.router.add_post(UPLOAD_PATH, self.receive)
        app.router.add_get(FILES_PATH, self.serve)

    def live(self) -> list[StoredFile]:
        """The completed files not deleted."""
        return [f for f in self.files.values() if f.completed and not f.deleted]

    @property
    def _base(self) -> str:
        return self.fake.base_url.removesuffix("/api/")

    def upload_url(self, params: JSON) -> JSON:
        filename = str(params.get("filename") or "")
        if not filename or len(filename) > FILENAME_CHARS:
            raise SlackError("invalid_arguments", f"filename: 1 to {FILENAME_CHARS} characters")
        try:
            length = int(params.get("length") or 0)
        except (TypeError, ValueError) as exc:
            raise SlackError("invalid_arguments", "length must be a number") from exc
        if length < 1:
            raise SlackError("invalid_arguments", "length must be at least 1")
        if length > self.max_bytes:
            raise SlackError("file_too_large")
        alt = str(params.get("alt_txt") or "")
        if len(alt) > ALT_TEXT_CHARS:
            raise SlackError("invalid_arguments", f"alt_txt: at most {ALT_TEXT_CHARS}")
        file_id = f"F{len(self.files) + 1:09d}"
        self.files[file_id] = StoredFile(file_id, filename, length, alt)
        return {"file_id": file_id, "upload_url": self._base + UPLOAD_PATH.format(
            file_id=file_id)}

    async def receive(self, request: web.Request) -> web.Response:
        found = self.files.get(request.match_info["file_id"])
        if found is None or found.completed:
            return web.Response(status=404, text="no such upload")
        body = await request.read()
        if len(body) != found.length:
            return web.Response(status=400, text=f"expected {found.length} bytes, got "
                                                 f"{len(body)}")
        found.content = body
        return web.Response(text=f"OK - {len(body)}")

    async def serve(self, request: web.Request) -> web.Response:
        found = self.files.get(request.match_info["file_id"])
        if found is None or not found.completed or found.deleted or found.content is None:
            return web.Response(status=404, text="file_not_found")
        if found.mimetype.startswith("text/"):  # shown in the browser, as Slack previews it
            return web.Response(body=found.content, content_type="text/plain",
                                charset="utf-8")
        return web.Response(body=found.content, content_type=found.mimetype)

    def complete(self, params: JSON) -> JSON:
        listed = json_argument(params.get("files"), "files")
        if not isinstance(listed, list) or not 1 <= len(listed) <= FILES_PER_CALL:
            raise SlackError("invalid_arguments", f"files: 1 to {FILES_PER_CALL} objects")
        done = [self._completed(entry) for entry in listed]
        channel = str(params.get("channel_id") or "")
        if channel:
            self._share(channel, params, done)
        return {"files": [f.to_dict(self._base) for f in done]}

    def _completed(self, entry: Any) -> StoredFile:
        found = self.files.get(str(entry.get("id") or "")) if isinstance(entry, dict) else None
        if found is None or found.deleted:
            raise SlackError("file_not_found")
        if found.content is None:
            raise SlackError("file_upload_not_finished")  # nothing reached the upload URL
        title = str(entry.get("title") or "")
        if len(title) > TITLE_CHARS:
            raise SlackError("invalid_arguments", f"title: at most {TITLE_CHARS} characters")
        found.title, found.completed = title or found.filename, True
        return found

    def _share(self, channel: str, params: JSON, done: list[StoredFile]) -> None:
        """Shared in a channel: one message showing the files (a thread reply with thread_ts),
        an image in an image block, another file in the message's `files`."""
        blocks: list[JSON] = [{"type": "image", "slack_file": {"id": f.id},
                               "alt_text": f.alt_txt or f.title} for f in done if f.is_image]
        text = str(params.get("initial_comment") or done[0].title)
        others = [f.to_dict(self._base) for f in done if not f.is_image]
        if not others:
            self.fake.call("chat.postMessage", channel=channel,
                           thread_ts=params.get("thread_ts") or None, text=text,
                           blocks=blocks or None)
            return
        thread_ts = self.fake.thread_root(channel, str(params.get("thread_ts") or "") or None)
        self.fake.store(Message(channel, self.fake.next_ts(), text, blocks, thread_ts,
                                files=others))

    def delete(self, params: JSON) -> JSON:
        found = self.files.get(str(params.get("file") or ""))
        if found is None or found.deleted:
            raise SlackError("file_not_found")
        found.deleted = True
        return {}

    def info(self, params: JSON) -> JSON:
        if READ_SCOPE not in self.fake.scopes:
            raise SlackError("missing_scope", needed=READ_SCOPE,
                             provided=",".join(self.fake.scopes))
        canvas = self.fake.canvases.found(params.get("file"))
        if canvas is not None:
            return {"file": canvas.to_dict(self._base)}
        found = self.files.get(str(params.get("file") or ""))
        if found is None or found.deleted or not found.completed:
            raise SlackError("file_not_found")
        return {"file": found.to_dict(self._base)}

    def check_images(self, blocks: list[JSON]) -> None:
        """A message's image blocks showing an uploaded file: a completed image, not deleted."""
        for block in blocks:
            ref = block.get("slack_file") if block.get("type") == "image" else None
            if not isinstance(ref, dict) or "id" not in ref:
                continue
            found = self.files.get(str(ref["id"]))
            if found is None or found.deleted or not found.completed or not found.is_image:
                raise SlackError("invalid_blocks", "downloading image failed")

