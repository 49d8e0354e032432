"""`redsearch up` from the command line: a busy port is one clear line and exit 2."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from tests.conftest import TEST_REDIS_URL, cli_env


def test_a_busy_playground_port_is_a_one_line_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {**cli_env(tmp_path), "REDIS_URL": TEST_REDIS_URL}
        done = subprocess.run([sys.executable, "-m", "redsearch.cli", "up", "--port", str(port)],
                              env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    [error] = errors
    assert error.startswith(f"redsearch: error: cannot serve the playground on 127.0.0.1:{port}")
    assert error.endswith("choose another port with --port (make run PORT=…)")
    assert "Traceback" not in done.stderr
