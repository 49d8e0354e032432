"""Spending caps and usage in the store (docs/teams.md): the policy file's errors are one line
naming the key; usage is increased atomically, so several workers charging at once (separate
connection pools on PostgreSQL) lose nothing and count nothing twice; a run cap admits exactly
as many runs as it allows; the resource owner finalises a run at a cap and refuses a Deep
upgrade that would breach one."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from contract.estimates import RecentEstimates, estimate, record_run
from redsearch.cli import main
from research_core.budget.caps import CapBreach, CapStatus, Headroom
from research_core.budget.owner import BudgetOwner
from research_core.errors import SettingsError
from research_core.loop.engine import Engine
from research_core.loop.memory.state import RunState
from research_core.models.tier_factory import aclose_tiers, build_tiers
from research_core.policy import Caps, Policy, load_policy
from research_core.settings import BudgetSettings, Settings
from research_core.store.models import Base
from research_core.store.sql import SqlStore
from research_core.store.usage import RunCaps, UsageStore
from tests.conftest import AS_OF, RecordingBackend, scripted_settings
from tests.engine_run import QUESTION, Serve, default_similarity
from tests.scripted import Script
from tests.test_modes import FOUR, THREE
from tests.test_store_backends import _postgres_answers
from workers.team_rules import job_settings

PG_URL = os.environ.get("TEST_DATABASE_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
NOON = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)

POLICY = """
admins: [U0ADMIN]
channels: [C0RESEARCH, C0OPS]
deep:
  default: []
  channels:
    C0RESEARCH: ["*"]
caps:
  user:
    day: {runs: 3, tokens: 50000, cost_usd: 1.5}
  channel:
    month: {cost_usd: 40}
"""


def _policy_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return path


def test_a_policy_file_sets_admins_channels_deep_and_caps(tmp_path: Path) -> None:
    settings = Settings.from_env({"RED_POLICY_FILE": str(_policy_file(tmp_path, POLICY))})
    policy = settings.policy
    assert policy.is_admin("U0ADMIN") and not policy.is_admin("U0ALICE")
    assert policy.answers_in("C0OPS") and not policy.answers_in("C0RANDOM")
    assert policy.may_deep("U0ALICE", "C0RESEARCH", ("*",))
    assert not policy.may_deep("U0ALICE", "C0OPS", ("*",))  # the default: nobody
    assert policy.caps.limits("user", "day").runs == 3
    assert policy.caps.limits("channel", "month").cost_usd == 40
    assert policy.caps.limits("channel", "day").tokens is None


def test_without_a_policy_file_the_defaults_hold() -> None:
    policy = Settings.from_env({"RED_DEEP_ALLOWED": "U0ALICE"}).policy
    assert policy == Policy()
    assert policy.answers_in("C0ANY") and not policy.caps.any
    assert policy.may_deep("U0ALICE", "C0ANY", ("U0ALICE",))
    assert not policy.may_deep("U0BOB", "C0ANY", ("U0ALICE",))


@pytest.mark.parametrize(("text", "key"), [
    ("caps:\n  user:\n    day: {tokens: lots}\n", "caps.user.day.tokens"),
    ("caps:\n  user:\n    week: {runs: 1}\n", "caps.user.week"),
    ("caps:\n  channel:\n    month: {cost_usd: -1}\n", "caps.channel.month.cost_usd"),
    ("admins: U0ADMIN\n", "admins"),
    ("deep:\n  channels:\n    C0X: 5\n", "deep.channels.C0X"),
    ("chanels: ['*']\n", "chanels"),
])
def test_a_malformed_policy_is_one_line_naming_the_key(tmp_path: Path, text: str,
                                                        key: str) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env({"RED_POLICY_FILE": str(_policy_file(tmp_path, text))})
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("RED_POLICY_FILE ") and f": {key}: " in message, message


def test_unreadable_or_not_yaml_policy_files_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"^RED_POLICY_FILE .*: cannot read it"):
        load_policy(tmp_path / "missing.yaml")
    with pytest.raises(SettingsError, match=r"^RED_POLICY_FILE .*: not valid YAML"):
        load_policy(_policy_file(tmp_path, "caps: [unclosed\n"))
    with pytest.raises(SettingsError, match="top level must be a mapping"):
        load_policy(_policy_file(tmp_path, "- a list\n"))


@pytest.fixture(params=["sqlite", "postgresql"])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'runs.db'}"
        return
    if not _postgres_answers():
        pytest.skip("no PostgreSQL answers on 127.0.0.1:5432")
    store = await SqlStore.open(PG_URL)
    async with store.engine.begin() as conn:  # a clean schema for this test
        await conn.run_sync(Base.metadata.drop_all)
        await conn.run_sync(Base.metadata.create_all)
    await store.close()
    yield PG_URL


async def test_usage_survives_a_restart_and_a_resumed_run_is_not_counted_twice(
        store_url: str) -> None:
    caps = Caps()
    store = await SqlStore.open(store_url)
    usage = UsageStore(store, clock=lambda: NOON)
    assert await usage.admit_run("run1", "U0ALICE", "C0RESEARCH", caps) is None
    await usage.charge("run1", "U0ALICE", "C0RESEARCH", 1000, 0.25, caps)
    await store.close()
    store = await SqlStore.open(store_url)  # a restart: a new worker resumes the run
    usage = UsageStore(store, clock=lambda: NOON)
    assert await usage.admit_run("run1", "U0ALICE", "C0RESEARCH", caps) is None
    await usage.charge("run1", "U0ALICE", "C0RESEARCH", 1000, 0.25, caps)  # same totals
    await usage.charge("run1", "U0ALICE", "C0RESEARCH", 1500, 0.5, caps)
    day = (await usage.current("user", "U0ALICE"))["day"]
    month = (await usage.current("channel", "C0RESEARCH"))["month"]
    await store.close()
    assert (day.runs, day.tokens, day.cost_usd) == (1, 1500, 0.5)
    assert (month.runs, month.tokens, month.cost_usd) == (1, 1500, 0.5)


@pytest.mark.timeout(60)
async def test_concurrent_runs_on_several_workers_lose_and_double_no_usage(
        store_url: str) -> None:
    """Eight workers (each its own connection pool), each charging its own runs step by step
    at once, all to the same user and channel: the totals are exactly the sum."""
    if not store_url.startswith("postgresql"):
        pytest.skip("concurrent workers need PostgreSQL (SQLite has one writer)")
    workers, runs_each, steps = 8, 3, 5
    caps = Caps()
    stores = [await SqlStore.open(store_url) for _ in range(workers)]

    async def worker(index: int) -> None:
        usage = UsageStore(stores[index], clock=lambda: NOON)
        for run in range(runs_each):
            charge_id = f"w{index}r{run}"
            assert await usage.admit_run(charge_id, "U0ALICE", "C0RESEARCH", caps) is None
            for step in range(1, steps + 1):
                await usage.charge(charge_id, "U0ALICE", "C0RESEARCH", 100 * step,
                                   0.01 * step, caps)
                # a resumed job charging the same totals again adds nothing
                await usage.charge(charge_id, "U0ALICE", "C0RESEARCH", 100 * step,
                                   0.01 * step, caps)

    try:
        await asyncio.gather(*(worker(i) for i in range(workers)))
        usage = UsageStore(stores[0], clock=lambda: NOON)
        user = await usage.current("user", "U0ALICE")
        channel = await usage.current("channel", "C0RESEARCH")
    finally:
        for store in stores:
            await store.close()
    runs = workers * runs_each
    for used in (user["day"], user["month"], channel["day"], channel["month"]):
        assert used.runs == runs
        assert used.tokens == runs * 100 * steps
        assert used.cost_usd == pytest.approx(runs * 0.01 * steps)


@pytest.mark.timeout(60)
async def test_a_run_cap_admits_exactly_that_many_runs_at_once(store_url: str) -> None:
    caps = Caps.model_validate({"channel": {"day": {"runs": 5}}})
    count = 12 if store_url.startswith("postgresql") else 6
    stores = [await SqlStore.open(store_url) for _ in range(4)]
    try:
        results = await asyncio.gather(*(
            UsageStore(stores[i % 4], clock=lambda: NOON).admit_run(
                f"run{i}", f"U{i}", "C0RESEARCH", caps) for i in range(count)))
        used = await UsageStore(stores[0], clock=lambda: NOON).current("channel",
                                                                       "C0RESEARCH")
    finally:
        for store in stores:
            await store.close()
    refused = [r for r in results if r is not None]
    assert len(refused) == count - 5 and used["day"].runs == 5
    breach = refused[0]
    assert breach.message() == ("this channel's daily run cap (5 runs) is reached: 5 runs "
                                "used; it resets at 2026-12-01 00:00 UTC")


async def test_a_charge_past_a_cap_reports_it_with_what_is_used_and_when_it_resets(
        tmp_path: Path) -> None:
    caps = Caps.model_validate({"user": {"month": {"tokens": 2000}}})
    store = await SqlStore.open(f"sqlite+aiosqlite:///{tmp_path / 'runs.db'}")
    usage = UsageStore(store, clock=lambda: NOON)
    try:
        await usage.admit_run("run1", "U0ALICE", "C0RESEARCH", caps)
        under = await usage.charge("run1", "U0ALICE", "C0RESEARCH", 1500, 0.1, caps)
        over = await usage.charge("run1", "U0ALICE", "C0RESEARCH", 2100, 0.2, caps)
        refused = await usage.admit_run("run2", "U0ALICE", "C0OTHER", caps)
    finally:
        await store.close()
    assert under.reached is None and under.headroom.tokens == 500
    assert over.reached is not None
    assert over.reached.message() == ("your monthly token cap (2,000 tokens) is reached: "
                                      "2,100 tokens used; it resets at 2026-12-01 00:00 UTC")
    assert refused is not None and refused.measure == "tokens"


def _breach(used: float, cap: float) -> CapBreach:
    return CapBreach("user", "U0ALICE", "day", "tokens", used, cap,
                     dt.datetime(2026, 12, 1, tzinfo=dt.UTC))


def test_the_owner_finalises_at_a_cap_and_refuses_deep_that_would_breach_one() -> None:
    settings = BudgetSettings(steps=10)
    owner = BudgetOwner.start(settings, "auto", "U0ALICE")
    for _ in range(4):
        assert owner.spend("steps")
    # 4 steps used 4,000 tokens; Deep adds 5 steps (~5,000 tokens), 3,000 are left
    owner.note_caps(CapStatus(None, Headroom(tokens=3000, tokens_breach=_breach(7000, 10000))),
                    4000, 0.0)
    refusal = owner.cap_refusal()
    assert refusal is not None and refusal.startswith(
        "Deep would use about 5,000 tokens more, past your daily token cap")
    owner.note_caps(CapStatus(None, Headroom(tokens=9000, tokens_breach=_breach(1000, 10000))),
                    4000, 0.0)
    assert owner.cap_refusal() is None
    owner.note_caps(CapStatus(_breach(10200, 10000)), 4000, 0.0)
    assert owner.finalising
    assert owner.final_reason is not None and owner.final_reason.startswith(
        "spending cap reached: your daily token cap (10,000 tokens) is reached")
    assert owner.spend("model_calls"), "the report can still be written"
    assert not owner.spend("steps")


def test_a_worker_runs_deep_as_the_channel_allows() -> None:
    policy = Policy.model_validate({"deep": {"default": ["U0ALICE"],
                                            "channels": {"C0OPS": []}}})
    settings = dataclasses.replace(Settings(), policy=policy)
    assert job_settings(settings, "C0OPS").budget.deep_allowed == ()
    assert job_settings(settings, "C0RESEARCH").budget.deep_allowed == ("U0ALICE",)
    assert job_settings(Settings(), "C0OPS").budget.deep_allowed == ("*",)  # no rule


def test_the_picker_says_how_long_recent_runs_took_never_what_they_cost() -> None:
    runs = [{"deep": False, "took_s": 20.0 * n, "tiers": {"planner": [1000 * n, 0]}}
            for n in range(1, 11)]  # median 110 s
    line = estimate([*runs, {"deep": True, "took_s": 400, "tiers": {"planner": [0, 0]}}])
    assert line == "Recent runs took: *Standard* about 2 min · *Deep* about 7 min"
    assert estimate(runs[:1]) == "Recent runs took: *Standard* under a minute"
    assert estimate([]) == "" and estimate([{"deep": True, "tiers": {}}]) == ""


async def test_the_picker_reads_recent_runs_once_a_moment_under_a_burst(
        redis: aioredis.Redis) -> None:
    estimates = RecentEstimates(redis, fresh_s=0.3)
    await record_run(redis, "T1", False, 20.0)
    first = await estimates.line("T1")
    assert first == "Recent runs took: *Standard* under a minute"
    await record_run(redis, "T1", True, 400.0)
    await record_run(redis, "T2", True, 400.0)
    assert await estimates.line("T1") == first  # read a moment ago: not read again
    assert await estimates.line("T2") == "Recent runs took: *Deep* about 7 min"
    await asyncio.sleep(0.35)
    assert await estimates.line("T1") == first + " · *Deep* about 7 min"


async def test_an_upgrade_that_would_breach_a_cap_is_refused_in_a_run(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    """The run of test_modes' upgrade (Deep applied at step 4 without caps, ~1,750 tokens
    spent by then) under a 3,000-token daily cap: Deep's 3 more steps at that rate would
    pass it, so the upgrade is refused with that reason; every call is charged."""
    server = await serve(Script(subquestions=FOUR))
    settings = scripted_settings(server.base_url, steps=6, evidence_per_done_node=9,
                                 rounds_per_node=1)
    state = RunState.new(QUESTION, AS_OF, settings)
    caps = Caps.model_validate({"user": {"day": {"tokens": 3000}}})
    guard = RunCaps(UsageStore(store), state.run_id, "U0ALICE", "C0RESEARCH", caps)
    tiers = build_tiers(settings)
    try:
        await Engine.build(settings, tiers, backend, store, similarity=default_similarity(),
                           caps=guard).run(state)
    finally:
        await aclose_tiers(tiers)
    budget = state.log.of_kind("budget")
    [refused] = [e for e in budget if e.data.get("event") == "upgrade-refused"]
    assert "upgrade to deep refused: Deep would use about" in refused.message
    assert "more, past your daily token cap (" in refused.message
    # never applied (the planner is asked again at later turns, so a last request may still
    # be pending when the run ends)
    assert state.extra.budget["deep_state"] != "deep" and state.status == "finished"
    assert not [e for e in budget if e.data.get("event") == "deep-applied"]
    used = (await UsageStore(store).current("user", "U0ALICE"))["day"]
    assert used.tokens == sum(t.total_tokens for t in state.ledger.totals()), "all charged"


def test_a_malformed_policy_stops_a_command_with_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("RED_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("RED_POLICY_FILE", str(_policy_file(tmp_path, "caps: {user: 3}\n")))
    assert main(["usage"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("redsearch: error: RED_POLICY_FILE ") and "\n" not in err
    assert ": caps.user: " in err


@pytest.mark.timeout(120)
async def test_concurrent_engine_runs_on_postgresql_charge_exactly_their_ledgers(
        serve: Serve, backend: RecordingBackend) -> None:
    """Four real runs at once, each on its own connection pool (as four workers would be),
    charging the same user and channel after every step: the usage is exactly the sum of
    their ledgers, and four runs."""
    if not _postgres_answers():
        pytest.skip("no PostgreSQL answers on 127.0.0.1:5432")
    setup = await SqlStore.open(PG_URL)
    async with setup.engine.begin() as conn:
        await conn.run_sync(Base.metadata.drop_all)
        await conn.run_sync(Base.metadata.create_all)
    await setup.close()
    server = await serve(Script(subquestions=THREE))
    settings = scripted_settings(server.base_url, steps=4)
    caps = Caps.model_validate({"channel": {"day": {"tokens": 10_000_000}}})  # not reached
    stores = [await SqlStore.open(PG_URL) for _ in range(4)]
    states = [RunState.new(f"{QUESTION} ({i})", AS_OF, settings) for i in range(4)]

    async def run(store: SqlStore, state: RunState) -> None:
        usage = UsageStore(store)
        assert await usage.admit_run(state.run_id, "U0ALICE", "C0RESEARCH", caps) is None
        guard = RunCaps(usage, state.run_id, "U0ALICE", "C0RESEARCH", caps)
        tiers = build_tiers(settings)
        try:
            await Engine.build(settings, tiers, backend, store,
                               similarity=default_similarity(), caps=guard).run(state)
        finally:
            await aclose_tiers(tiers)

    try:
        await asyncio.gather(*(run(store, state) for store, state in zip(stores, states,
                                                                          strict=True)))
        used = await UsageStore(stores[0]).current("channel", "C0RESEARCH")
    finally:
        for store in stores:
            await store.close()
    ledgers = [t for s in states for t in s.ledger.totals()]
    assert all(s.status == "finished" for s in states)
    assert used["day"].runs == 4 and used["month"].runs == 4
    assert used["day"].tokens == sum(t.total_tokens for t in ledgers) > 0
    assert used["day"].cost_usd == pytest.approx(sum(t.cost_usd for t in ledgers))
