"""The ablation harness (`redsearch.harness.ablation`): every family names functions that
exist where the answer path looks them up, and a run with one switched off still answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from redsearch.harness import ablation
from research_core.loop.answering import builder
from research_core.loop.engine import Engine
from research_core.loop.memory.state import RunState
from research_core.models.tier_factory import build_tiers
from research_core.search.corpus import CorpusBackend
from research_core.settings import Settings
from research_core.store.sql import SqlStore
from tests.conftest import AS_OF
from tests.engine_run import default_similarity


@pytest.mark.parametrize("family", sorted(ablation.FAMILIES))
def test_every_family_switches_off_functions_that_exist(family: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    replaced: list[str] = []

    def replace(owner: Any, name: str, value: Any) -> None:
        replaced.append(name)
        monkeypatch.setattr(owner, name, value)

    ablation.switch_off(family, replace)
    assert len(replaced) == len(ablation.FAMILIES[family])


def test_a_renamed_function_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(ablation.FAMILIES, "gone", [(builder.__name__, "no_such", len)])
    with pytest.raises(AttributeError):
        ablation.switch_off("gone", monkeypatch.setattr)


async def test_a_run_with_the_evidence_facets_off_still_answers(
        corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ablation.switch_off("evidence-facets", monkeypatch.setattr)
    settings = Settings.from_env({f"RED_{t}_MODEL": "none"
                                  for t in ("PLANNER", "EXECUTOR", "REPORTER")})
    store = await SqlStore.open(f"sqlite+aiosqlite:///{tmp_path / 'runs.db'}")
    backend = CorpusBackend.from_folder(corpus_dir)
    try:
        state = RunState.new("How did heat pump sales move in 2026, and what happened to "
                             "prices?", AS_OF, settings, mode="standard")
        report = await Engine.build(settings, build_tiers(settings), backend, store,
                                    similarity=default_similarity()).run(state)
    finally:
        await store.close()
        backend.close()
    subs = [n.question for n in state.tree.nodes.values() if n.depth == 1]
    assert subs and report.cited


def test_a_missing_suite_is_one_line_and_exit_2(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert ablation.main(["--family", "none", "--suite", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.strip().startswith("ablation: error: suite folder not found")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
