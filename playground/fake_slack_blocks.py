"""Block Kit as Slack checks it: the fake refuses what Slack refuses (`invalid_blocks` for a
message, `invalid_arguments` for a view), so that a payload the tests pass with is one Slack
would accept.

The limits are Slack's documented ones: 50 blocks in a message and 100 in a Home tab; section
text 3,000 characters and 10 fields of 2,000; header text 150; context 10 elements; actions 25
elements; a button's value 2,000; block ids 255; `markdown` blocks 12,000 characters in all per
payload; a `plan` holds at most 50 `task_card`s with unique `task_id`s and a status of pending,
in_progress, complete or error, and its sources are `url` elements; `context_actions` holds 1 to 5
`feedback_buttons` / `icon_button` elements, a feedback button's text at most 75 characters;
an `image` shows an `image_url` or a `slack_file` (an id or a url), with an alt text and an
optional plain-text title of at most 2,000 characters each.
"""

from __future__ import annotations

from typing import Any

from playground.fake_slack_messages import JSON, SlackError

MESSAGE_BLOCKS = 50
VIEW_BLOCKS = 100
SECTION_TEXT = 3_000
FIELD_TEXT = 2_000
FIELDS = 10
HEADER_TEXT = 150
CONTEXT_ELEMENTS = 10
ACTION_ELEMENTS = 25
VALUE_CHARS = 2_000
ID_CHARS = 255
MARKDOWN_TOTAL = 12_000
PLAN_TASKS = 50
FEEDBACK_TEXT = 75
CONTEXT_ACTIONS = 5
TASK_STATUSES = ("pending", "in_progress", "complete", "error")
ALERT_LEVELS = ("default", "info", "warning", "error", "success")
PLAIN_BLOCKS = ("divider", "rich_text", "input", "video", "file", "table")
IMAGE_TEXT = 2_000


class BlockProblem(Exception):
    """What is wrong with a block (the fake answers Slack's error code, and records this)."""


def check_message_blocks(blocks: list[JSON]) -> None:
    """SlackError('invalid_blocks') when a message's blocks would be refused by Slack."""
    try:
        _check(blocks, MESSAGE_BLOCKS)
    except BlockProblem as exc:
        raise SlackError("invalid_blocks", str(exc)) from exc


def check_view_blocks(blocks: list[JSON]) -> None:
    """SlackError('invalid_arguments') when a Home tab's blocks would be refused."""
    try:
        _check(blocks, VIEW_BLOCKS)
    except BlockProblem as exc:
        raise SlackError("invalid_arguments", str(exc)) from exc


def _check(blocks: list[JSON], limit: int) -> None:
    if len(blocks) > limit:
        raise BlockProblem(f"{len(blocks)} blocks; at most {limit}")
    markdown = 0
    for index, block in enumerate(blocks):
        if not isinstance(block, dict):
            raise BlockProblem(f"block {index} is not an object")
        _check_block(block, index)
        if block.get("type") == "markdown":
            markdown += len(str(block.get("text") or ""))
    if markdown > MARKDOWN_TOTAL:
        raise BlockProblem(f"markdown blocks hold {markdown} characters; at most "
                           f"{MARKDOWN_TOTAL} in all")


def _check_block(block: JSON, index: int) -> None:
    kind = block.get("type")
    block_id = block.get("block_id")
    if block_id is not None and (not isinstance(block_id, str) or len(block_id) > ID_CHARS):
        raise BlockProblem(f"block {index}: block_id must be text of at most {ID_CHARS}")
    checker = _CHECKERS.get(str(kind))
    if checker is None and kind not in PLAIN_BLOCKS:
        raise BlockProblem(f"block {index}: unknown block type {kind!r}")
    if checker is not None:
        checker(block)


def _text(obj: Any, limit: int, what: str, plain_only: bool = False) -> None:
    if not isinstance(obj, dict) or obj.get("type") not in ("plain_text", "mrkdwn"):
        raise BlockProblem(f"{what} must be a text object")
    if plain_only and obj.get("type") != "plain_text":
        raise BlockProblem(f"{what} must be plain_text")
    text = obj.get("text")
    if not isinstance(text, str) or not text or len(text) > limit:
        raise BlockProblem(f"{what} must hold 1 to {limit} characters")


def _section(block: JSON) -> None:
    if "text" not in block and "fields" not in block:
        raise BlockProblem("a section needs text or fields")
    if "text" in block:
        _text(block["text"], SECTION_TEXT, "section text")
    fields = block.get("fields", [])
    if not isinstance(fields, list) or len(fields) > FIELDS:
        raise BlockProblem(f"a section has at most {FIELDS} fields")
    for field in fields:
        _text(field, FIELD_TEXT, "a section field")
    if "accessory" in block:
        _element(block["accessory"])


def _image(block: JSON) -> None:
    has_url, ref = "image_url" in block, block.get("slack_file")
    if has_url == (ref is not None):
        raise BlockProblem("an image needs one of image_url and slack_file")
    if ref is not None and (not isinstance(ref, dict) or not (ref.get("id") or ref.get("url"))):
        raise BlockProblem("slack_file needs an id or a url")
    alt = block.get("alt_text")
    if not isinstance(alt, str) or not alt or len(alt) > IMAGE_TEXT:
        raise BlockProblem(f"an image's alt_text must hold 1 to {IMAGE_TEXT} characters")
    if "title" in block:
        _text(block["title"], IMAGE_TEXT, "an image's title", plain_only=True)


def _header(block: JSON) -> None:
    _text(block.get("text"), HEADER_TEXT, "header text", plain_only=True)


def _context(block: JSON) -> None:
    elements = block.get("elements")
    if not isinstance(elements, list) or not 1 <= len(elements) <= CONTEXT_ELEMENTS:
        raise BlockProblem(f"a context holds 1 to {CONTEXT_ELEMENTS} elements")
    for element in elements:
        if isinstance(element, dict) and element.get("type") == "image":
            continue
        _text(element, SECTION_TEXT, "a context element")


def _actions(block: JSON) -> None:
    elements = block.get("elements")
    if not isinstance(elements, list) or not 1 <= len(elements) <= ACTION_ELEMENTS:
        raise BlockProblem(f"actions hold 1 to {ACTION_ELEMENTS} elements")
    for element in elements:
        _element(element)


def _element(element: Any) -> None:
    if not isinstance(element, dict) or not isinstance(element.get("type"), str):
        raise BlockProblem("an element must be an object with a type")
    action_id = element.get("action_id")
    if action_id is not None and (not isinstance(action_id, str) or len(action_id) > ID_CHARS):
        raise BlockProblem(f"action_id must be text of at most {ID_CHARS}")
    if element["type"] == "button":
        _text(element.get("text"), FEEDBACK_TEXT, "a button's text", plain_only=True)
        if len(str(element.get("value") or "")) > VALUE_CHARS:
            raise BlockProblem(f"a button's value has at most {VALUE_CHARS} characters")


def _markdown(block: JSON) -> None:
    text = block.get("text")
    if not isinstance(text, str) or not text:
        raise BlockProblem("a markdown block needs text")


def _plan(block: JSON) -> None:
    if not isinstance(block.get("title"), str) or not block["title"]:
        raise BlockProblem("a plan needs a title")
    tasks = block.get("tasks", [])
    if not isinstance(tasks, list) or len(tasks) > PLAN_TASKS:
        raise BlockProblem(f"a plan holds at most {PLAN_TASKS} tasks")
    ids = [str(t.get("task_id")) if isinstance(t, dict) else "" for t in tasks]
    if len(set(ids)) != len(ids):
        raise BlockProblem("task_ids in a plan must be unique")
    for task in tasks:
        _task(task)


def _task(task: Any) -> None:
    if not isinstance(task, dict):
        raise BlockProblem("a task card must be an object")
    for name in ("task_id", "title"):
        if not isinstance(task.get(name), str) or not task[name]:
            raise BlockProblem(f"a task card needs a {name}")
    if task.get("status", "pending") not in TASK_STATUSES:
        raise BlockProblem(f"task status must be one of {', '.join(TASK_STATUSES)}")
    for name in ("details", "output"):
        if name in task and (not isinstance(task[name], dict)
                             or task[name].get("type") != "rich_text"):
            raise BlockProblem(f"a task card's {name} must be one rich_text")
    for source in task.get("sources", []):
        _url_source(source)


def _url_source(source: Any) -> None:
    if not isinstance(source, dict) or source.get("type") != "url":
        raise BlockProblem("a task source must be a url element")
    url, text = source.get("url"), source.get("text")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise BlockProblem("a url source needs an http(s) url")
    if not isinstance(text, str) or not text:
        raise BlockProblem("a url source needs text")


def _context_actions(block: JSON) -> None:
    elements = block.get("elements")
    if not isinstance(elements, list) or not 1 <= len(elements) <= CONTEXT_ACTIONS:
        raise BlockProblem(f"context_actions hold 1 to {CONTEXT_ACTIONS} elements")
    for element in elements:
        kind = element.get("type") if isinstance(element, dict) else None
        if kind == "feedback_buttons":
            for side in ("positive_button", "negative_button"):
                button = element.get(side)
                if not isinstance(button, dict):
                    raise BlockProblem(f"feedback_buttons need a {side}")
                _text(button.get("text"), FEEDBACK_TEXT, "a feedback button's text", True)
                value = button.get("value")
                if not isinstance(value, str) or not value or len(value) > VALUE_CHARS:
                    raise BlockProblem(f"a feedback button's value: 1 to {VALUE_CHARS} chars")
        elif kind == "icon_button":
            if not isinstance(element.get("icon"), str):
                raise BlockProblem("an icon_button needs an icon")
            _text(element.get("text"), FEEDBACK_TEXT, "an icon button's text", True)
        else:
            raise BlockProblem(f"context_actions cannot hold {kind!r}")


def _alert(block: JSON) -> None:
    _text(block.get("text"), SECTION_TEXT, "alert text")
    if block.get("level", "default") not in ALERT_LEVELS:
        raise BlockProblem(f"alert level must be one of {', '.join(ALERT_LEVELS)}")


_CHECKERS = {"section": _section, "header": _header, "context": _context,
             "actions": _actions, "markdown": _markdown, "plan": _plan, "task_card": _task,
             "context_actions": _context_actions, "alert": _alert, "image": _image}
