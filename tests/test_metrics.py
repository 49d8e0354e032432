"""Prometheus metrics: the bot's /metrics and a worker process's metrics port, scraped before,
during and after a real run through the fake Slack (signed requests into the bot, an ARQ job,
a `redsearch worker` process on the scripted tiers), move as the run goes; and the worker's
log, in RED_LOG_FORMAT=json, is one JSON object per line that names the run, without a secret
or a page's text."""

from __future__ import annotations

import asyncio
import copy
import json
import signal
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.metrics import QUEUE_READ_EVERY_S
from contract.redis_server import free_port
from playground.fake_slack import BOT_USER_ID
from tests.conftest import DOCS, SLACK_TOKEN, RecordingBackend, cli_env
from tests.fakes.openai_server import Reply
from tests.metrics_scrape import Scrape, scrape
from tests.scripted import Script
from tests.slack_driver import ALICE
from tests.slack_stack import CHANNEL, Stack, StartStack, wait_for

QUESTION = "How did heat pump sales and prices move in 2026?"
API_KEY = "sk-metrics-test-key-0123456789"


class SlowScript(Script):
    """The scripted tiers, each answer 0.15 s late (a run long enough to be scraped while it
    goes); the first query plan is not JSON (retried), claim checks never are (fallback)."""

    def __init__(self) -> None:
        super().__init__()
        self.plans = 0
        self.rules["VerdictsOut"] = lambda body: "no verdicts today"
        self.rules["QueryPlan"] = self._plan

    def _plan(self, body: dict[str, Any]) -> str:
        self.plans += 1
        return "not json" if self.plans == 1 else self.default_QueryPlan(body)

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        answer = super().__call__(body)
        reply = answer if isinstance(answer, Reply) else Reply(content=answer)
        reply.delay_s = 0.15
        return reply


def worker_env(stack: Stack, redis_url: str, corpus: Path, data: Path,
               metrics_port: int) -> dict[str, str]:
    env = {**cli_env(data, stack.settings.tiers["planner"].base_url),
           "REDIS_URL": redis_url, "SLACK_BOT_TOKEN": SLACK_TOKEN,
           "SLACK_API_URL": stack.settings.slack.api_url, "RED_CORPUS_DIR": str(corpus),
           "DATABASE_URL": stack.settings.db_url, "RED_SLACK_PROGRESS_INTERVAL_S": "0.2",
           "RED_WORKER_METRICS_PORT": str(metrics_port),
           "RED_WORKER_METRICS_HOST": "127.0.0.1", "RED_LOG_FORMAT": "json"}
    for tier in ("PLANNER", "EXECUTOR", "REPORTER"):
        env[f"RED_{tier}_API_KEY"] = API_KEY
        env[f"RED_{tier}_PRICE_IN_PER_MTOK"] = "1.5"
        env[f"RED_{tier}_PRICE_OUT_PER_MTOK"] = "6"
    return env


async def worker_up(session: aiohttp.ClientSession, url: str,
                    proc: asyncio.subprocess.Process) -> Scrape:
    """The worker's first scrape, once it serves (it loads its models first)."""
    for _ in range(600):
        if proc.returncode is not None:
            raise AssertionError(f"the worker exited ({proc.returncode})")
        try:
            return await scrape(session, url)
        except aiohttp.ClientConnectionError:
            await asyncio.sleep(0.1)
    raise AssertionError("the worker never served its metrics")


@pytest.mark.timeout(180)
async def test_the_bot_and_a_worker_count_a_run_as_it_goes(
        start_stack: StartStack, backend: RecordingBackend, corpus_dir: Path,
        redis_url: str, tmp_path: Path) -> None:
    stack = await start_stack(SlowScript(), backend, in_process_worker=False)
    bot_url = stack.driver.url.replace("/slack/events", "/metrics")
    port = free_port()
    worker_url = f"http://127.0.0.1:{port}/metrics"
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "redsearch.cli", "worker",
            env=worker_env(stack, redis_url, corpus_dir, tmp_path / "data", port),
            stdout=out, stderr=out, start_new_session=True)
    try:
        async with aiohttp.ClientSession() as session:
            await _run_and_scrape(stack, session, bot_url, worker_url, proc)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
    _check_json_log(log.read_text("utf-8"), stack)


async def _run_and_scrape(stack: Stack, session: aiohttp.ClientSession, bot_url: str,
                          worker_url: str, proc: asyncio.subprocess.Process) -> None:
    bot0 = await scrape(session, bot_url)
    idle = await worker_up(session, worker_url, proc)
    assert idle.value("redsearch_runs_in_flight") == 0
    assert idle.value("redsearch_worker_job_slots") == 2
    assert idle.value("redsearch_jobs_started_total") == 0
    assert not {"redsearch_active_jobs", "redsearch_slack_duplicate_deliveries_total"} \
        & idle.names(), "a worker's process exports the bot's metrics"

    _, mention = await stack.driver.mention(f"<@{BOT_USER_ID}> {QUESTION}", event_id="EvM1")
    await stack.driver.mention(f"<@{BOT_USER_ID}> {QUESTION}", event_id="EvM1")  # a retry
    assert await stack.driver.post("{}", "application/json", secret="wrong") == 401
    picker = copy.deepcopy(stack.thread(mention)[0])
    stack.fake.force_ratelimit(1, "chat.postMessage")  # the worker's first post: a 429
    await stack.driver.click(ALICE, "depth_standard", picker)

    asked = await scrape(session, bot_url)
    _bot_counted_the_requests(bot0, asked)
    during = await _mid_run(session, bot_url, worker_url)
    await wait_for(lambda: bool(stack.finals(mention)), 120, "the run's end")
    await stack.settled(20)
    after = await scrape(session, worker_url)
    _worker_counted_the_run(during, after)
    done = await scrape(session, bot_url)
    assert done.value("redsearch_active_jobs") == 0


def _delta(before: Scrape, after: Scrape, name: str, **labels: str) -> float:
    return after.value(name, **labels) - before.value(name, **labels)


def _bot_counted_the_requests(before: Scrape, after: Scrape) -> None:
    """Two mentions received (one a retried delivery, dropped), one click, one refusal."""
    assert _delta(before, after, "redsearch_slack_events_received_total",
                  type="app_mention") == 2
    assert _delta(before, after, "redsearch_slack_events_acked_total", type="app_mention") == 2
    assert _delta(before, after, "redsearch_slack_events_received_total",
                  type="block_actions") == 1
    assert _delta(before, after, "redsearch_slack_ack_seconds_count") == 3
    assert _delta(before, after, "redsearch_slack_duplicate_deliveries_total") == 1
    assert _delta(before, after, "redsearch_slack_requests_refused_total",
                  reason="signature") == 1
    assert _delta(before, after, "redsearch_jobs_queued_total", kind="research") == 1
    # the picker posted, then turned into the status message, by the bot's own client
    assert _delta(before, after, "redsearch_slack_api_calls_total", method="chat.postMessage",
                  result="ok") >= 1
    assert _delta(before, after, "redsearch_slack_api_calls_total", method="chat.update",
                  result="ok") >= 1


async def _mid_run(session: aiohttp.ClientSession, bot_url: str, worker_url: str) -> Scrape:
    """A scrape of the worker while the run is in flight and has made model calls, and the
    bot's view of the queue at that moment; then a later one that has moved on."""
    first: Scrape | None = None
    for _ in range(900):
        now = await scrape(session, worker_url)
        if now.value("redsearch_runs_in_flight") == 1 and \
                now.value("redsearch_model_calls_total") > 0:
            if first is None:
                first = now
                await asyncio.sleep(QUEUE_READ_EVERY_S)  # the bot's figures: a second old at most
                queue = await scrape(session, bot_url)
                assert queue.value("redsearch_active_jobs") == 1
                assert queue.value("redsearch_queue_jobs", state="due") >= 1  # it runs
            elif now.value("redsearch_model_calls_total") > \
                    first.value("redsearch_model_calls_total"):
                assert now.value("redsearch_jobs_started_total", kind="research") == 1
                return now
        await asyncio.sleep(0.1)
    raise AssertionError("never scraped the run in flight, making headway")


def _worker_counted_the_run(during: Scrape, after: Scrape) -> None:
    assert after.value("redsearch_runs_in_flight") == 0
    assert after.value("redsearch_jobs_ended_total", kind="research", outcome="finished") == 1
    assert after.value("redsearch_job_queue_wait_seconds_count", kind="research") == 1
    assert after.value("redsearch_run_duration_seconds_count", mode="standard") == 1
    assert after.value("redsearch_run_steps_count", mode="standard") == 1
    assert after.value("redsearch_run_steps_sum", mode="standard") >= 1
    calls = after.value("redsearch_model_calls_total")
    assert calls > during.value("redsearch_model_calls_total")
    assert after.value("redsearch_model_calls_total", tier="planner", outcome="retried") == 1
    assert after.value("redsearch_model_calls_total", tier="executor", outcome="fallback") >= 1
    assert after.value("redsearch_model_fallbacks_total", purpose="check_claims",
                       reason="unusable") >= 1
    assert after.value("redsearch_model_tokens_total", type="prompt") > calls
    assert after.value("redsearch_model_cost_usd_total") > 0
    made = calls - after.value("redsearch_model_calls_total", outcome="refused")
    assert after.value("redsearch_model_call_seconds_count") == made
    assert after.value("redsearch_search_queries_total", backend="corpus") >= 1
    assert after.value("redsearch_slack_api_ratelimited_total", method="chat.postMessage") == 1
    assert after.value("redsearch_slack_api_retry_wait_seconds_total") >= 1
    assert after.value("redsearch_slack_api_calls_total", method="chat.postMessage",
                       result="ok") >= 2  # the plan, the parts, the closing message


def _check_json_log(text: str, stack: Stack) -> None:
    """Every line of the worker's log but the command's own (`worker starting…`, `worker
    stopped`) is a JSON object; the job's lines name its run, team and channel; no secret,
    no page text."""
    lines = [ln for ln in text.splitlines() if not ln.startswith("worker ")]
    entries = [json.loads(line) for line in lines]
    assert entries, text[-2000:]
    assert all({"time", "level", "role", "logger", "message"} <= set(e) for e in entries)
    assert {e["role"] for e in entries} == {"worker"}
    job_lines = [e for e in entries if e.get("run_id")]
    assert job_lines, "no line names its run"
    assert all(e.get("channel") == CHANNEL and e.get("team") == stack.driver.team
               for e in job_lines)
    for secret in (API_KEY, SLACK_TOKEN):
        assert secret not in text
    bodies = [spec[4] for spec in DOCS.values()]
    sentences = [s.strip() for body in bodies for s in body.split("\n\n") if len(s) > 30]
    assert not [s for s in sentences if s in text], "page text in the log"
