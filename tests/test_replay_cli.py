"""Search replay: citation rates, `redsearch replay RUN_ID` on a stored run, and the replay
that `redsearch research` prints. The CLI runs as a subprocess (asyncio's, so the fake model
server in this test's event loop keeps answering while it runs)."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from research_core.evaluation.replay import EvidenceFact, trace
from research_core.loop.memory.state import RunState
from research_core.store.sql import SqlStore
from tests.conftest import RecordingBackend, cli_env
from tests.engine_run import QUESTION, Serve, run_engine
from tests.fakes.openai_server import schema_name
from tests.scripted import Script

ROW = re.compile(r"^(Q\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)%", re.M)
TIMEOUT_S = 60


@dataclass
class Done:
    code: int
    stdout: str
    stderr: str


async def redsearch(env: dict[str, str], *args: str) -> Done:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "redsearch.cli", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT_S)
    assert proc.returncode is not None
    return Done(proc.returncode, out.decode(), err.decode())


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """os.environ without the caller's RED_* settings; the database is the `store` fixture's."""
    clean = cli_env(tmp_path / "data")
    clean["DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"
    return clean


def expected_rows(state: RunState, cited_sources: set[str]) -> list[tuple[str, int, int, int]]:
    """(query id, results, kept, cited) computed straight from the run's state."""
    rows = []
    for q in state.queries:
        kept = [e for e in state.evidence if e.query_id == q.id and e.kept]
        cited = [e for e in kept if e.source_id in cited_sources]
        rows.append((q.id, len(q.result_ids), len(kept), len(cited)))
    return rows


def printed_rows(stdout: str) -> list[tuple[str, int, int, int]]:
    return [(m[0], int(m[1]), int(m[2]), int(m[3])) for m in ROW.findall(stdout)]


def test_citation_rates_of_hand_built_queries() -> None:
    queries = [("Q1", "heat pump sales", ["s1", "s2", "s3", "s4"]),
               ("Q2", "heat pump prices", ["s1", "s5"]),
               ("Q3", "nothing found", [])]
    evidence = [EvidenceFact("Q1", "s1", True), EvidenceFact("Q1", "s2", True),
                EvidenceFact("Q1", "s3", False), EvidenceFact("Q2", "s5", True),
                EvidenceFact("Q2", "s4", False)]
    rows = trace(queries, evidence, cited_sources={"s1", "s3", "s5"})
    assert [(r.results, r.kept, r.cited) for r in rows] == [(4, 2, 1), (2, 1, 1), (0, 0, 0)]
    assert [r.citation_rate for r in rows] == [0.25, 0.5, 0.0]


async def test_replay_of_a_stored_run_prints_its_counts(
        serve: Serve, backend: RecordingBackend, store: SqlStore,
        env: dict[str, str]) -> None:
    def relevance(line: str) -> float:
        return 0.5 if "fall" in line else 0.95

    def cite_one(body: dict[str, Any]) -> str:
        return "Heat pump sales rose 12.4% in September 2026 [1]."

    script = Script(relevance=relevance, rules={"report": cite_one})
    out = await run_engine(serve, script, backend, store)
    expected = expected_rows(out.state, set(out.report.cited_source_ids()))
    assert any(k < r for _, r, k, _ in expected) and any(c for *_, c in expected)
    done = await redsearch(env, "replay", out.state.run_id)
    assert done.code == 0, done.stderr
    assert printed_rows(done.stdout) == expected
    total_results = sum(r for _, r, _, _ in expected)
    assert f"{len(expected)} queries, {total_results} results" in done.stdout


async def test_replay_of_an_unknown_run_is_one_error_line(env: dict[str, str]) -> None:
    done = await redsearch(env, "replay", "no-such-run")
    assert done.code == 2 and done.stdout == ""
    assert done.stderr.splitlines() == ["redsearch: error: no stored run with id 'no-such-run'"]


async def test_research_prints_the_replay_and_stores_the_run(
        serve: Serve, corpus_dir: Path, env: dict[str, str], tmp_path: Path) -> None:
    decisions = iter(['{"action": "search", "query": "heat pump sales", "reason": "r"}',
                      '{"action": "search", "query": "heat pump prices", "reason": "r"}',
                      '{"action": "answer", "query": "none", "reason": "enough"}'])

    def model(body: dict[str, Any]) -> str:
        return next(decisions) if schema_name(body) else "Sales rose 12.4% [1]. Prices [2]."

    server = await serve(model)
    for tier in ("PLANNER", "EXECUTOR", "REPORTER"):
        env[f"RED_{tier}_BASE_URL"] = server.base_url
        env[f"RED_{tier}_MODEL"] = "script"
    out_json = tmp_path / "run.json"
    done = await redsearch(env, "research", QUESTION, "--corpus", str(corpus_dir), "--as-of",
                           "2026-10-31", "--strategy", "monolithic", "--json", str(out_json))
    assert done.code == 0, done.stderr
    result = json.loads(out_json.read_text("utf-8"))
    assert result["strategy"] == "monolithic"
    replay = [(r["query_id"], r["results"], r["kept"], r["cited"]) for r in result["replay"]]
    assert [r[0] for r in replay] == ["Q1", "Q2"]
    assert "\nSearch replay\n" in done.stdout and printed_rows(done.stdout) == replay
    stored = await redsearch(env, "replay", result["run_id"])
    assert printed_rows(stored.stdout) == replay
