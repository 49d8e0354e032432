"""The command line of MCP sources: `redsearch up --mcp` (and `make run MCP=…`) adds servers to
RED_MCP_SERVERS, and `redsearch sources` says which configured source answers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from redsearch.mcp_option import with_mcp
from redsearch.sources import run_sources
from research_core.errors import SettingsError
from research_core.settings import Settings
from tests.conftest import cli_env
from tests.mcp_servers import WIKI

ROOT = Path(__file__).resolve().parent.parent


def servers(env: dict[str, str]) -> list[dict[str, object]]:
    listed: list[dict[str, object]] = json.loads(env["RED_MCP_SERVERS"])
    return listed


def test_mcp_options_become_servers() -> None:
    env = with_mcp({}, ["python -m tests.mcp_wiki_server", "docs=http://127.0.0.1:8765/mcp",
                        "wiki-mcp.py --ro", "http://127.0.0.1:9000/mcp",
                        "/usr/bin/python3.11 -u servers/tickets.py --port 1"])
    assert servers(env) == [
        {"name": "mcp_wiki_server", "command": ["python", "-m", "tests.mcp_wiki_server"]},
        {"name": "docs", "url": "http://127.0.0.1:8765/mcp"},
        {"name": "wiki-mcp", "command": ["wiki-mcp.py", "--ro"]},
        {"name": "mcp", "url": "http://127.0.0.1:9000/mcp"},
        {"name": "tickets", "command": ["/usr/bin/python3.11", "-u", "servers/tickets.py",
                                        "--port", "1"]}]
    assert "RED_SEARCH_BACKENDS" not in env  # its default with servers: mcp
    kept = with_mcp({"RED_MCP_SERVERS": '[{"name": "docs", "command": ["d"]}]',
                     "RED_SEARCH_BACKENDS": "corpus"}, ["docs=python -m docs_mcp"])
    assert [s["name"] for s in servers(kept)] == ["docs", "docs2"]
    assert kept["RED_SEARCH_BACKENDS"] == "corpus,mcp"
    assert Settings.from_env(kept).web.backends == ("corpus", "mcp")
    assert with_mcp({"A": "b"}, []) == {"A": "b"}


@pytest.mark.parametrize("spec", ["", "wiki=", "python -m 'unclosed"])
def test_a_bad_mcp_option_is_one_line(spec: str) -> None:
    with pytest.raises(SettingsError, match="--mcp"):
        with_mcp({}, [spec])


async def test_sources_says_which_source_answers(capsys: pytest.CaptureFixture[str]) -> None:
    listed = json.dumps([{"name": "wiki", "command": [sys.executable, str(WIKI)]},
                         {"name": "gone", "command": ["/nonexistent/wiki-mcp"]}])
    settings = Settings.from_env({"RED_SEARCH_BACKENDS": "corpus,mcp",
                                  "RED_MCP_SERVERS": listed})
    assert await run_sources(settings) == 1  # one configured source does not answer
    out = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split()[2] for line in out[1:]}
    assert rows == {"corpus": "yes", "mcp:wiki": "yes", "mcp:gone": "no", "slack": "off"}
    assert "searches with 'search', reads with 'read' (2 tools)" in out[2]
    assert "could not start" in out[3]


def test_sources_from_the_command_line_with_bad_servers_is_one_line(tmp_path: Path) -> None:
    env = {**cli_env(tmp_path), "RED_MCP_SERVERS": '[{"name": "wiki", "command": "wiki"}]'}
    done = subprocess.run([sys.executable, "-m", "redsearch.cli", "sources"], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "redsearch: error: RED_MCP_SERVERS item 1 (wiki): 'command' must be a non-empty list "
        'of strings, e.g. ["python", "-m", "wiki_mcp"]']
