"""`redsearch bot` and `redsearch worker` refuse to start without what they need: one clear
line and exit 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from contract.redis_server import free_port
from tests.conftest import SLACK_TOKEN, TEST_REDIS_URL, cli_env


def run_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "redsearch.cli", *args], env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("args", "extra", "says"), [
    (["bot"], {}, "set SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET"),
    (["worker"], {}, "set SLACK_BOT_TOKEN: the worker posts in Slack threads"),
    (["worker"], {"SLACK_BOT_TOKEN": SLACK_TOKEN, "REDIS_URL": "dead"},
     "no Redis answers at REDIS_URL=redis://***@127.0.0.1"),
])
def test_missing_settings_are_one_line_errors(args: list[str], extra: dict[str, str],
                                              says: str, tmp_path: Path) -> None:
    env = {k: v for k, v in cli_env(tmp_path).items() if not k.startswith("SLACK_")}
    env["REDIS_URL"] = TEST_REDIS_URL
    if extra.get("REDIS_URL") == "dead":  # a password in the URL is never printed
        extra = {**extra, "REDIS_URL": f"redis://:hunter2@127.0.0.1:{free_port()}/0"}
    done = run_cli(args, {**env, **extra})
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("redsearch: error: ") and says in line
    assert "hunter2" not in done.stderr
