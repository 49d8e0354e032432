"""The default path end to end on the bundled GGUF model: `redsearch up` (supervised worker,
playground), a mention, Standard, the whole run, then two follow-ups in the thread — the
path on which a follow-up once crashed the whole service."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from contract.redis_server import free_port
from tests.conftest import cli_env
from tests.up_process import text_of, up_process

pytestmark = pytest.mark.gguf

QUESTION = "How did heat pump sales move in 2026?"
FOLLOWUPS = ("Which month had the highest heat pump sales?",
             "What happened to heat pump prices?")
NOT_FOUND = ("Nothing found so far answers this.",)


def followup_answer(replies: list[dict[str, Any]], question: str) -> dict[str, Any] | None:
    return next((m for m in replies if f"*Follow-up:* {question}" in text_of(m)), None)


def sources_line(message: dict[str, Any]) -> str:
    return next((line for line in text_of(message).splitlines()
                 if line.startswith("Sources:")), "")


@pytest.mark.timeout(1500)
async def test_two_followups_on_the_bundled_model_through_up(
        corpus_dir: Path, redis_url: str, tmp_path: Path) -> None:
    env = {**cli_env(tmp_path / "data"), "REDIS_URL": redis_url,
           "RED_CORPUS_DIR": str(corpus_dir), "RED_BUDGET_STEPS": "3",
           "RED_ENGINE_REPORT_MAX_TOKENS": "160", "RED_ENGINE_FOLLOWUP_STEPS": "1"}
    async with up_process(env, free_port(), ready_timeout_s=120) as up:
        mention = await up.say(f"@RED {QUESTION}")
        [picker] = await up.wait_for(mention, lambda r: len(r) == 1, 30, "the picker")
        await up.click(picker["ts"], "depth_standard")
        await up.wait_for(mention, lambda r: any("Research finished" in text_of(m) for m in r),
                          900, "the report on the bundled model")
        for question in FOLLOWUPS:
            await up.say(question, thread_ts=mention)

            def answered(replies: list[dict[str, Any]], asked: str = question) -> bool:
                return followup_answer(replies, asked) is not None

            replies = await up.wait_for(mention, answered, 420, f"the answer to {question!r}")
            answer = followup_answer(replies, question)
            assert answer is not None
            body = text_of(answer).split(question, 1)[1]
            cited = re.findall(r"\[(\d+)\]", body)
            assert (cited and sources_line(answer) != "Sources: none") or any(
                phrase in body for phrase in NOT_FOUND), text_of(answer)
        assert up.process.returncode is None, "redsearch up died"
        assert not any("exited (signal" in line for line in up.output), "a worker crashed"
        texts = [text_of(m) for m in await up.thread(mention)]
        assert len(texts) == len(set(texts)), "a message was posted twice"
        assert not any("could not be answered" in t for t in texts)
