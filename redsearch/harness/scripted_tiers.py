"""A local OpenAI-compatible endpoint with scripted answers, for the chaos and load suites.

Every `/v1/chat/completions` call waits `delay_s` (a hosted model's latency), then answers in
the JSON shape its schema names, with plausible content for the sample corpus (heat pumps):
sub-questions, one query per question, high relevance, summaries that keep every line, a
report that cites every source, and claims that check out. A question may carry a run tag,
`[run NAME]`; the tag is kept in the sub-questions, so every call of that run can be told
apart (`calls`), and stripped from the search queries. Nothing here is a model: it only makes
runs take a realistic time while the services around them are measured.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

JSON = dict[str, Any]
RUN_TAG = re.compile(r"\[run ([A-Za-z0-9_-]{1,24})\]")
LINE_CHARS = 280
TOPICS = (
    "What were heat pump sales figures in 2026?",
    "How did heat pump prices move in 2026?",
    "How did heat pump exports to Europe change in 2026?",
    "How many heat pump installations were reported in 2026?",
)


def tagged(question: str, tag: str) -> str:
    """`question` carrying the run tag `tag`."""
    return f"{question} [run {tag}]"


def tag_of(text: str) -> str:
    """The run tag a prompt carries ('' when none)."""
    match = RUN_TAG.search(text)
    return match.group(1) if match else ""


@dataclass(frozen=True)
class ModelCall:
    at: float  # time.time() when the call arrived
    schema: str  # the JSON schema's name, "report" for free text
    tag: str  # the run tag found in the prompt ('' when none)


def _schema(body: JSON) -> str:
    fmt = body.get("response_format") or {}
    return str((fmt.get("json_schema") or {}).get("name", "")) or "report"


def _user_text(body: JSON) -> str:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return str(users[-1].get("content", "")) if users else ""


def _field(text: str, label: str) -> str:
    match = re.search(rf"^{label}:\s*(.*)$", text, re.M)
    return match.group(1).strip() if match else ""


def _data(text: str) -> str:
    return text.split("<<<DATA", 1)[-1].split("DATA>>>", 1)[0].strip()


def _letters(n: int) -> str:
    """A, B, … Z, AA, …: distinct words that are not figures."""
    return (_letters((n - 1) // 26) if n > 26 else "") + chr(65 + (n - 1) % 26)


def _lines(text: str, width: int = LINE_CHARS) -> list[str]:
    """The words of `text` packed into lines of at most `width` characters: a summary that
    keeps every number and source id within the schema's bounds."""
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word[:width])
    return lines


def _decomposition(text: str) -> JSON:
    goal = _field(text, "Main goal")
    tag = tag_of(goal)
    split = _field(text, "Question to split")
    if split == goal:  # the root: its topics
        subs = [tagged(t, tag) if tag else t for t in TOPICS]
    else:  # a thin sub-question: two narrower ones
        base = RUN_TAG.sub("", split).strip().rstrip("?")
        subs = [f"{base} according to official statistics?", f"{base} according to the news?"]
        subs = [tagged(s, tag) if tag else s for s in subs]
    return {"subquestions": [{"question": q, "value": round(0.9 - 0.1 * i, 2)}
                             for i, q in enumerate(subs)]}


def _answers() -> dict[str, Callable[[str], JSON | str]]:
    return {
        "Decomposition": _decomposition,
        "QueryPlan": lambda t: {"queries": [RUN_TAG.sub("", _field(t, "Question")).strip()]},
        "HitScores": lambda t: {"scores": [
            {"index": i, "relevance": 0.9, "reason": "on the question"}
            for i, _ in enumerate(re.findall(r"^#\d+ ", t, re.M))]},
        "MemorySummaryOut": lambda t: {"conclusion": "summary of the findings",
                                       "evidence": _lines(_data(t))[:40], "open_doubts": []},
        "ReflectionOut": lambda t: {"answers_goal": True, "off_goal": [], "neglected": "",
                                    "drifted": False},
        "VerdictsOut": lambda t: {"verdicts": [
            {"index": int(i), "supported": True, "reason": "in the evidence"}
            for i in re.findall(r"^#(\d+) ", _data(t), re.M)]},
        "FollowUpOut": lambda t: {"answer": "The findings above answer it [1].",
                                  "sufficient": True},
        "report": lambda t: "\n\n".join(
            f"Finding {_letters(int(n))} from the sources [{n}]."
            for n in re.findall(r"^\[(\d+)\]", _data(t), re.M)) or "No sources were found.",
    }


class ScriptedTiers:
    """The endpoint; `await start()` returns its base URL (`…/v1`) for RED_<TIER>_BASE_URL."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.calls: list[ModelCall] = []
        self.in_flight = 0
        self.base_url = ""
        self._answers = _answers()
        self._runner: web.AppRunner | None = None

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, host, port).start()
        self.base_url = f"http://{host}:{self._runner.addresses[0][1]}/v1"
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def calls_of(self, tag: str) -> list[ModelCall]:
        return [c for c in self.calls if c.tag == tag]

    def answer(self, body: JSON) -> str:
        """The scripted reply's text to one request body."""
        schema = _schema(body)
        rule = self._answers.get(schema)
        if rule is None:
            return "{}"
        result = rule(_user_text(body))
        return result if isinstance(result, str) else json.dumps(result)

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        self.calls.append(ModelCall(time.time(), _schema(body), tag_of(text)))
        self.in_flight += 1
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            self.in_flight -= 1
        content = self.answer(body)
        prompt = max(1, len(text) // 4)
        completion = max(1, len(content) // 4)
        return web.json_response({
            "id": f"chatcmpl-{time.time_ns()}", "object": "chat.completion",
            "created": int(time.time()), "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion}})
