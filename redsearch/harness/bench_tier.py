"""The benchmark's deterministic tier: a rule-based policy behind a local OpenAI-compatible
endpoint, so that the token curve is reproducible and a sweep takes minutes, not hours.

It is no model. It reads each prompt and answers by rules: the next facets of the generated
corpus (`bench_corpus`) as sub-questions and as the monolithic agent's queries, relevance by
whether a hit names the facet's country and measure, summaries that keep every line, and
reports and answers that state every figure of their numbered sources, each citing its source.
Token counts are what a tokenizer would roughly report (a token per four characters), so both
strategies are charged alike for what they send and receive.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from redsearch.harness.bench_corpus import Facet, facets
from research_core.text.sentences import sentences

JSON = dict[str, Any]
CHARS_PER_TOKEN = 4
# A figure worth stating: a percentage, a decimal or a number with thousands separators.
_FIGURE = re.compile(r"\d(?:[\d,]*\d)?(?:\.\d+)?\s*%|\d{1,3}(?:,\d{3})+|\d+\.\d+")


def tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))


def _field(text: str, label: str) -> str:
    match = re.search(rf"^{label}:\s*(.*)$", text, re.M)
    return match.group(1).strip() if match else ""


def _data(text: str) -> str:
    return text.split("<<<DATA", 1)[-1].split("DATA>>>", 1)[0]


def _chunks(text: str, limit: int) -> list[str]:
    """`text` in pieces of at most `limit` characters, cut between words."""
    pieces: list[str] = []
    for word in text.split():
        if pieces and len(pieces[-1]) + 1 + len(word) <= limit:
            pieces[-1] += " " + word
        else:
            pieces.append(word[:limit])
    return pieces


def _numbered(data: str) -> list[tuple[str, str]]:
    """Each numbered source of a prompt's data ("[3] Title …" and the lines under it): its
    number and the text under its first line."""
    blocks = re.split(r"^\s*\[(\d+)\][^\n]*\n?", data, flags=re.M)
    return list(zip(blocks[1::2], blocks[2::2], strict=True))


def _facet_of(question: str) -> Facet | None:
    return next((f for f in facets() if f.country in question and f.measure in question), None)


@dataclass
class BenchPolicy:
    """The rules, with the one thing they remember: how far the facets have been handed out
    (`reset` between runs, so that both strategies see the same order)."""

    max_children: int = 4
    handed: int = 0
    calls: int = 0

    def reset(self) -> None:
        self.handed = 0

    def answer(self, schema: str, prompt: str) -> str:
        self.calls += 1
        rule = getattr(self, f"_{schema}", None)
        return rule(prompt) if rule is not None else self._text(prompt)

    def _next_facets(self, count: int) -> list[Facet]:
        found = facets()[self.handed:self.handed + count]
        self.handed += len(found)
        return found

    def _Decomposition(self, prompt: str) -> str:
        subs = [{"question": f.question, "value": 0.9} for f in self._next_facets(
            self.max_children)]
        return json.dumps({"subquestions": subs})

    def _QueryPlan(self, prompt: str) -> str:
        facet = _facet_of(_field(prompt, "Question"))
        query = facet.query if facet else _field(prompt, "Question")[:100]
        return json.dumps({"queries": [query]})

    def _HitScores(self, prompt: str) -> str:
        facet = _facet_of(_field(prompt, "Question"))
        scores = []
        for line in re.findall(r"^#(\d+) (.*)$", _data(prompt), re.M):
            hit = line[1]
            on_topic = facet is not None and facet.country in hit and facet.measure in hit
            scores.append({"index": int(line[0]), "relevance": 0.9 if on_topic else 0.2,
                           "reason": "names the facet" if on_topic else "another facet"})
        return json.dumps({"scores": scores})

    def _MemorySummaryOut(self, prompt: str) -> str:
        """Every note kept whole (split into lines of at most 300 characters): lossless."""
        earlier = prompt.split("Earlier summary:", 1)[-1].split("<<<DATA", 1)[0]
        earlier = "" if earlier.strip() == "none" else earlier
        notes = [ln.strip() for ln in (earlier + "\n" + _data(prompt)).splitlines()
                 if ln.strip()]
        lines = [chunk for note in notes for chunk in _chunks(note, 300)][:40]
        return json.dumps({"conclusion": (lines[0] if lines else "nothing found"),
                           "evidence": lines, "open_doubts": []})

    def _ReflectionOut(self, prompt: str) -> str:
        return json.dumps({"answers_goal": True, "off_goal": [], "neglected": "",
                           "drifted": False})

    def _VerdictsOut(self, prompt: str) -> str:
        indices = re.findall(r"^#(\d+) ", _data(prompt), re.M)
        return json.dumps({"verdicts": [{"index": int(i), "supported": True, "reason": "ok"}
                                        for i in indices]})

    def _NextAction(self, prompt: str) -> str:
        facet = next(iter(self._next_facets(1)), None)
        if facet is None:
            return json.dumps({"action": "answer", "query": "none", "reason": "all facets"})
        return json.dumps({"action": "search", "query": facet.query,
                           "reason": f"the {facet.measure} of {facet.country}"})

    def _text(self, prompt: str) -> str:
        """A report or the monolithic answer: every sentence of a numbered source that states
        a figure, once, citing that source: the best answer its prompt allows."""
        lines: dict[str, str] = {}
        for number, body in _numbered(_data(prompt)):
            for sentence in sentences(body, clauses=False):
                if _FIGURE.search(sentence) and sentence not in lines:
                    lines[sentence] = f"{sentence.rstrip('.')} [{number}]."
        return "\n".join(lines.values()) or "Nothing in the sources answers the question."


@dataclass
class PolicyServer:
    """`/v1/chat/completions` on 127.0.0.1 answering with `policy`, with usage counts."""

    policy: BenchPolicy
    base_url: str = ""
    _runner: web.AppRunner | None = field(default=None, repr=False)

    async def start(self) -> str:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.base_url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/v1"
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _chat(self, request: web.Request) -> web.Response:
        body: JSON = await request.json()
        prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        last = str(users[-1].get("content") or "") if users else ""
        schema = str(((body.get("response_format") or {}).get("json_schema") or {})
                     .get("name", ""))
        content = self.policy.answer(schema, last)
        return web.json_response(_completion(body, content, tokens(prompt), tokens(content)))


def _completion(body: JSON, content: str, prompt_tokens: int, completion_tokens: int) -> JSON:
    return {"id": "bench", "object": "chat.completion", "created": 0,
            "model": body.get("model", "bench"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}

