"""End to end on a GGUF model through llama-cpp-python in every tier: a corpus to a finished,
cited report. The tiny Gemma 3 270M base model proves the path, not the quality (the
embedded default takes only its measured calls: docs/models.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from research_core.models.llama_tier import gemma_model_path

pytestmark = pytest.mark.gguf


@pytest.mark.timeout(900)
def test_a_gguf_model_researches_a_corpus_to_a_cited_report(
        corpus_dir: Path, tmp_path: Path) -> None:
    out_json = tmp_path / "run.json"
    env = {**os.environ, "RED_DATA_DIR": str(tmp_path / "data"),
           "RED_BUDGET_STEPS": "3", "RED_ENGINE_REPORT_MAX_TOKENS": "160"}
    for tier in ("PLANNER", "EXECUTOR", "REPORTER"):
        env.pop(f"RED_{tier}_BASE_URL", None)
        env[f"RED_{tier}_MODEL"] = gemma_model_path()
    done = subprocess.run(
        [sys.executable, "-m", "redsearch.cli", "research",
         "How did heat pump sales and prices move in 2026?",
         "--corpus", str(corpus_dir), "--as-of", "2026-10-31", "--json", str(out_json)],
        env=env, capture_output=True, text=True, timeout=880, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert "[step  1] expand" in done.stderr
    result = json.loads(out_json.read_text("utf-8"))
    assert result["report"].strip()
    assert result["cited_source_ids"], "the report cites no source"
    known = {p.stem for p in corpus_dir.glob("*.md")}
    assert set(result["cited_source_ids"]) <= known
    tiers = {t["tier"]: t for t in result["tiers"]}
    assert tiers["planner"]["calls"] > 0 and tiers["reporter"]["calls"] >= 1
    assert all(t["prompt_tokens"] > 0 for t in tiers.values())
    assert "Tokens per tier" in done.stdout and "Sources" in done.stdout
