"""A run killed with SIGKILL mid-way resumes from its checkpoint: no finished step is done
again and no publication is emitted twice."""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from research_core.store.models import LedgerRow, PublicationRow, RunRow
from research_core.store.sql import SqlStore
from tests.conftest import cli_env
from tests.engine_run import Serve
from tests.fakes.openai_server import Reply
from tests.scripted import Script, field_of

QUESTION = "How did heat pump sales and prices move in 2026?"
PART = "── part "
THREE = [("What were heat pump sales figures?", 0.9), ("What were heat pump prices?", 0.8),
         ("What happened to heat pump exports?", 0.7)]


class Stalling:
    """The scripted tiers, until `stall` is set: then every call hangs (the worker is busy)."""

    def __init__(self) -> None:
        self.script = Script(subquestions=THREE)
        self.stall = False
        self.stalled = asyncio.Event()

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        if self.stall:
            self.stalled.set()
            return Reply(content="{}", delay_s=15)
        return self.script(body)


async def _run_until_first_part(args: list[str], env: dict[str, str],
                                tiers: Stalling) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "redsearch.cli", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    assert proc.stdout is not None
    seen = []
    while line := (await proc.stdout.readline()).decode():
        seen.append(line)
        if line.startswith(PART):
            tiers.stall = True
            break
    await asyncio.wait_for(tiers.stalled.wait(), 30)
    proc.kill()
    await proc.wait()
    seen.append((await proc.stdout.read()).decode())
    assert proc.returncode == -9
    return "".join(seen)


async def _resume(run_id: str, env: dict[str, str]) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "redsearch.cli", "resume", run_id, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode == 0, err.decode()[-2000:]
    return out.decode()


@pytest.mark.timeout(180)
async def test_sigkill_mid_run_then_resume(serve: Serve, corpus_dir: Path,
                                           tmp_path: Path) -> None:
    tiers = Stalling()
    server = await serve(tiers)
    env = cli_env(tmp_path / "data", server.base_url)
    before_out = await _run_until_first_part(
        ["research", QUESTION, "--corpus", str(corpus_dir), "--as-of", "2026-10-31"],
        env, tiers)
    store = await SqlStore.open(f"sqlite+aiosqlite:///{tmp_path / 'data' / 'redsearch.db'}")
    try:
        runs = await _runs(store)
        (run_id, saved_step) = runs[0]
        saved = await store.rows(LedgerRow, run_id)
        tiers.stall = False
        decompositions = len(server.requests_for("Decomposition"))
        after_out = await _resume(run_id, env)
        ledger = await store.rows(LedgerRow, run_id)
        publications = await store.rows(PublicationRow, run_id)
        status = (await store.run_row(run_id)).status  # type: ignore[union-attr]
    finally:
        await store.close()
    assert status == "finished" and "Sources" in after_out
    again = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "redsearch.cli", "resume", run_id, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, err = await again.communicate()
    assert again.returncode == 2 and err.decode().strip().endswith("has already finished")
    finished = {(r.seq, r.step, r.purpose) for r in saved}
    redone = [(r.step, r.purpose) for r in ledger
              if r.step <= saved_step and (r.seq, r.step, r.purpose) not in finished]
    assert not redone, f"model calls repeated for finished steps: {redone}"
    roots = [r for r in server.requests_for("Decomposition")  # later splits are new work
             if field_of(r, "Question to split") == QUESTION]
    assert len(roots) == 1 <= decompositions
    headers = Counter(line for line in (before_out + after_out).splitlines()
                      if line.startswith(PART))
    assert headers and all(n == 1 for n in headers.values()), headers
    sent = Counter((p.kind, p.text) for p in publications)
    assert sent and all(n == 1 for n in sent.values()), sent


async def _runs(store: SqlStore) -> list[tuple[str, int]]:
    async with store.sessions() as session:
        rows = (await session.execute(select(RunRow))).scalars().all()
    return [(r.run_id, r.step) for r in rows]

