"""A worker SIGKILLed mid-job: the reconciler hands the run to another worker once the lease
expires, the run resumes from its checkpoint, and no message is posted twice."""

from __future__ import annotations

import asyncio
import copy
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from contract.keys import resumes_key
from contract.requests import job_id
from playground.fake_slack import BOT_USER_ID, Change
from tests.conftest import SLACK_TOKEN, RecordingBackend, cli_env
from tests.fakes.openai_server import Reply
from tests.scripted import Script
from tests.slack_driver import ALICE
from tests.slack_stack import CHANNEL, Stack, StartStack, wait_for

QUESTION = "How did heat pump sales, prices and exports move in 2026?"
THREE = [("What were heat pump sales figures?", 0.9), ("What were heat pump prices?", 0.8),
         ("What happened to heat pump exports?", 0.7)]


class Stalling(Script):
    """The scripted tiers, until `stall` is set: then every call hangs (the worker is busy)."""

    def __init__(self) -> None:
        super().__init__(subquestions=THREE)
        self.stall = False
        self.stalled = asyncio.Event()

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        if self.stall:
            self.stalled.set()
            return Reply(content="{}", delay_s=20)
        return super().__call__(body)


def worker_env(stack: Stack, redis_url: str, corpus: Path, data: Path) -> dict[str, str]:
    base_url = stack.settings.tiers["planner"].base_url or ""
    return {**cli_env(data, base_url), "REDIS_URL": redis_url, "SLACK_BOT_TOKEN": SLACK_TOKEN,
            "SLACK_API_URL": stack.settings.slack.api_url, "RED_CORPUS_DIR": str(corpus),
            "RED_WORKER_LEASE_S": "4", "RED_WORKER_HEARTBEAT_S": "0.5",
            "RED_WORKER_RECONCILE_S": "0.5", "RED_SLACK_PROGRESS_INTERVAL_S": "0.2"}


async def spawn_worker(env: dict[str, str], log: Path) -> asyncio.subprocess.Process:
    with log.open("ab") as out:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "redsearch.cli", "worker", env=env,
            stdout=out, stderr=out, start_new_session=True)


@pytest.mark.timeout(150)
async def test_a_killed_worker_is_resumed_by_another_without_double_posts(
        start_stack: StartStack, backend: RecordingBackend, corpus_dir: Path,
        redis_url: str, tmp_path: Path) -> None:
    tiers = Stalling()
    stack = await start_stack(tiers, backend, in_process_worker=False)

    def stall_after_first_part(change: Change) -> None:
        if change.kind == "posted" and not tiers.stalled.is_set() and any(
                e.get("text", "").startswith("Sources:") for b in change.data.get("blocks", [])
                if b.get("type") == "context" for e in b.get("elements", [])):
            tiers.stall = True
    stack.fake.add_listener(stall_after_first_part)

    env = worker_env(stack, redis_url, corpus_dir, tmp_path / "data")
    log = tmp_path / "workers.log"
    first = await spawn_worker(env, log)
    second: asyncio.subprocess.Process | None = None
    try:
        _, mention = await stack.driver.mention(f"<@{BOT_USER_ID}> {QUESTION}")
        picker = copy.deepcopy(stack.thread(mention)[0])
        await stack.driver.click(ALICE, "depth_deep", picker)
        await asyncio.wait_for(tiers.stalled.wait(), 60)
        parts_before = {m.ts: m.text for m in stack.parts(mention)}
        os.kill(first.pid, signal.SIGKILL)
        assert await first.wait() == -signal.SIGKILL
        tiers.stall = False

        second = await spawn_worker(env, log)
        await wait_for(lambda: bool(stack.finals(mention)), 90, "the resumed run's end")
        thread = stack.thread(mention)
        plans = [m for m in thread if m.blocks and m.blocks[0]["type"] == "plan"]
        assert len(plans) == 1, "the resumed run posted a second plan"
        assert plans[0].blocks[0]["title"].startswith("Done —")  # the same plan
        parts_after = {m.ts: m.text for m in stack.parts(mention)}
        assert set(parts_before) <= set(parts_after)
        texts = stack.posted_texts()
        assert len(texts) == len(set(texts)), "a message was posted twice"
        assert len(stack.finals(mention)) == 1
        resumes = await stack.pool.get(resumes_key(job_id(CHANNEL, mention.ts)))
        assert resumes == b"1"
    finally:
        for proc in (first, second):
            if proc is not None and proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
                await asyncio.wait_for(proc.wait(), 30)
        print(log.read_text("utf-8", errors="replace")[-8000:])
    assert second is not None and second.returncode == 0
