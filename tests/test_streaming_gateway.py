"""Model text shown while it is written: the gateway streams a purpose's calls through the
real openai client (server-sent chunks from the fake server), discards an attempt whose text is
rejected, and falls back to a plain request where the endpoint refuses streaming."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from research_core.loop.publishing.answer_stream import AnswerStream
from research_core.models.gateway import Gateway
from research_core.models.ledger import Ledger
from research_core.models.openai_tier import OpenAITier
from research_core.protocols import Message
from research_core.runlog import RunLog
from research_core.settings import TierSettings
from tests.engine_run import Serve
from tests.fakes.openai_server import Reply


@dataclass
class Shown:
    """A PartStream that records what it is told."""

    events: list[str] = field(default_factory=list)

    async def write(self, text: str) -> None:
        self.events.append(f"+{text}")

    async def end(self) -> None:
        self.events.append("end")

    async def discard(self) -> None:
        self.events.append("discard")

    def text(self) -> str:
        return "".join(e[1:] for e in self.events if e.startswith("+"))


async def test_a_rejected_attempt_is_discarded_and_the_next_one_streamed(serve: Serve) -> None:
    answers = iter(["no citation here", "Prices fell 9.5% [1]."])
    server = await serve(lambda body: Reply(next(answers), chunk_delay_s=0.001))
    tier = OpenAITier(TierSettings(model="m", base_url=server.base_url, max_retries=0))
    shown = Shown()
    gateway = Gateway({"reporter": tier}, Ledger(prices={}), RunLog())
    gateway.stream_to("report", shown)
    try:
        text = await gateway.text("reporter", "report", [Message("user", "write")], 100,
                                  lambda: "fallback", lambda t: None if "[1]" in t else "cite")
    finally:
        await tier.aclose()
    assert text == "Prices fell 9.5% [1]."
    first_end = shown.events.index("end")
    assert "".join(e[1:] for e in shown.events[:first_end]) == "no citation here"
    assert shown.events[first_end + 1] == "discard"
    assert shown.events[-1] == "end" and shown.text().endswith("Prices fell 9.5% [1].")
    assert len([e for e in shown.events if e.startswith("+")]) > 4  # in pieces
    assert all(r.get("stream") is True for r in server.requests)
    assert gateway.ledger.entries[-1].completion_tokens > 0  # usage from the last chunk


async def test_an_endpoint_without_streaming_is_asked_plainly(serve: Serve) -> None:
    server = await serve(lambda body: "Prices fell [1].")
    server.streaming = False
    tier = OpenAITier(TierSettings(model="m", base_url=server.base_url, max_retries=0))
    shown = Shown()
    gateway = Gateway({"reporter": tier}, Ledger(prices={}), RunLog())
    gateway.stream_to("report", shown)
    try:
        for _ in range(2):
            assert await gateway.text("reporter", "report", [Message("user", "w")], 50,
                                      lambda: "fallback", lambda t: None) == "Prices fell [1]."
    finally:
        await tier.aclose()
    assert [r.get("stream") for r in server.requests] == [True, None, None]  # once refused
    assert shown.events == ["end", "end"]  # nothing shown while written; the calls ended


async def test_a_follow_ups_answer_is_read_out_of_its_json_as_it_arrives() -> None:
    raw = json.dumps({"answer": 'Sales "rose" 12% é 😀\nsee [1].', "sufficient": True})
    for size in (1, 2, 5, 100):
        shown = Shown()
        stream = AnswerStream(shown)
        for start in range(0, len(raw), size):
            await stream.write(raw[start:start + size])
        await stream.end()
        assert shown.text() == 'Sales "rose" 12% é 😀\nsee [1].' and shown.events[-1] == "end"
    shown = Shown()
    stream = AnswerStream(shown)
    await stream.write('{"answer": "Nothing found yet.", "sufficient": false}')
    await stream.end()
    assert shown.events[-2:] == ["end", "discard"]  # the model itself says it is not enough
    shown = Shown()
    await AnswerStream(shown).write('{"answer": "a\\ud83d\\ude00b\\ud800c"}')
    assert shown.text() == "a😀b\ufffdc"  # pairs joined, a lone half replaced
