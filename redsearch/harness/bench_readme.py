"""The README question in `make bench` (issue 43): `redsearch research` on the sample corpus,
Standard, 8 steps, once on the embedded default (the call kinds of its measured profile) and
once on the code path alone (every tier `none`), in the same bench run; the figure is the
ratio of their wall times, each a fresh process as a person's first run is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from research_core.settings import TIERS

README_QUESTION = "how did heat pump sales move in 2026?"
STEPS = "8"
LIMIT_S = 3600


@dataclass(frozen=True)
class Timed:
    name: str
    wall_s: float
    model_calls: int
    cited: int


def run_pair(env: Mapping[str, str]) -> tuple[Timed, Timed]:
    """The default, then the code path, on the same question."""
    code_path = {**env, **{f"RED_{t.upper()}_MODEL": "none" for t in TIERS}}
    return _timed("embedded default", env), _timed("code path", code_path)


def _timed(name: str, env: Mapping[str, str]) -> Timed:
    with tempfile.TemporaryDirectory(prefix="redsearch-bench-readme-") as folder:
        out = Path(folder) / "run.json"
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "redsearch.cli", "research", README_QUESTION,
                        "--depth", "standard", "--quiet", "--json", str(out)],
                       env={**os.environ, **env, "RED_DATA_DIR": folder,
                            "RED_BUDGET_STEPS": STEPS},
                       capture_output=True, text=True, timeout=LIMIT_S, check=True)
        wall = time.monotonic() - started
        result = json.loads(out.read_text("utf-8"))
    calls = sum(t["calls"] for t in result["tiers"])
    return Timed(name, wall, calls, len(result["cited_source_ids"]))


def lines(pair: tuple[Timed, Timed]) -> list[str]:
    model, code = pair
    rows = [f"{t.name:<18}{t.wall_s:>7.1f} s   {t.model_calls:>3} model calls   "
            f"{t.cited} sources cited" for t in pair]
    return ["== the README question, Standard, 8 steps (fresh process each)", *rows,
            f"time ratio: {model.wall_s / code.wall_s:.1f} (embedded default / code path)"]
