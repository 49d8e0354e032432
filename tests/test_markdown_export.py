"""`redsearch research … --markdown FILE` (issue 46): the real CLI researches a real corpus on the
code path (no model) and writes the same Markdown document that Slack's "Save as canvas" and
"Export as Markdown" keep (`contract.research_document`), built from the run it stored; a file
it cannot write is refused before the run, in one line."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import pytest

from contract.research_document import research_document
from redsearch.cli import main
from research_core.settings import Settings
from research_core.store.restore import load_state
from research_core.store.sql import SqlStore
from tests.conftest import AS_OF, cli_env

NONE = {f"RED_{t}_MODEL": "none" for t in ("PLANNER", "EXECUTOR", "REPORTER")}
QUESTION = "How did heat pump sales move in 2026?"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    wanted = {**cli_env(tmp_path / "data"), **NONE, "RED_BUDGET_STEPS": "4"}
    for key in list(os.environ):
        if key not in wanted:
            monkeypatch.delenv(key)
    for key, value in wanted.items():
        monkeypatch.setenv(key, value)
    return wanted


async def stored_document(env: dict[str, str], run_id: str) -> str:
    settings = Settings.from_env(env)
    store = await SqlStore.open(settings.db_url)
    try:
        state = await load_state(store, run_id, settings)
    finally:
        await store.close()
    document = research_document(state)
    assert document is not None
    return document.markdown


def test_research_writes_the_document_slack_keeps(env: dict[str, str], corpus_dir: Path,
                                                  tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "report.md"
    code = main(["research", QUESTION, "--corpus", str(corpus_dir), "--as-of",
                 AS_OF.isoformat(), "--depth", "standard", "--quiet", "--markdown",
                 str(target)])
    assert code == 0
    found = re.search(r"^Run (\w+) — ", capsys.readouterr().out, re.M)
    assert found is not None
    written = target.read_text("utf-8")
    assert written == asyncio.run(stored_document(env, found.group(1)))
    assert written.startswith(f"# {QUESTION}\n\n_Researched as of {AS_OF.isoformat()} · run ")
    assert "## Report" in written and "**Sources:**\n1. [" in written
    assert "Open the thread in Slack" not in written, "a terminal run has no thread"


def test_a_markdown_file_that_cannot_be_written_is_refused_before_the_run(
        env: dict[str, str], corpus_dir: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["research", QUESTION, "--corpus", str(corpus_dir), "--markdown",
                 str(tmp_path / "nowhere" / "report.md")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith(
        "redsearch: error: cannot write --markdown file")
