"""Bad input to the real `redsearch` CLI, run as a subprocess.

Every case must end with a non-zero exit, one `redsearch: error:` line on stderr and no
traceback. All three tiers point at a closed local port with no retries, so no GGUF model is
loaded and nothing waits on a network.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import cli_env as shared_cli_env
from tests.conftest import write_doc

API_KEY = "sk-secret-123"
ERROR_PREFIX = "redsearch: error:"
QUESTION = "How did heat pump prices move in 2026?"
TIMEOUT_S = 20

VALID_DOCS = {
    "cli-sales-2026-09": (
        "official_statistics", "en", "2026-10-10", "Heat pump sales in September 2026",
        "Heat pump sales reached 214,000 units in September 2026, up 12.4% on the year.",
    ),
    "cli-prices-2026-10": (
        "news", "en", "2026-10-20", "Heat pump prices fall",
        "Heat pump equipment prices fell 9.5% to 7,150 euros in October 2026.",
    ),
    "cli-zh-exports-2026-10": (
        "industry_association", "zh", "2026-10-16", "热泵出口欧洲回升",
        "2026年1—9月中国对欧洲热泵出口额同比增长18%。",
    ),
}

BROKEN_FRONT_MATTER = {
    "invalid-yaml": '---\nid: broken\ntitle: "unterminated\nurl: https://x.example/b\n---\nBody.\n',
    "not-closed": "---\nid: broken\ntitle: Broken\n",
    "no-front-matter": "Just a body, no front matter.\n",
    "missing-key": "---\nid: broken\ntitle: Broken\nurl: https://x.example/b\n---\nBody.\n",
    "impossible-date": (
        "---\nid: broken\ntitle: Broken\nurl: https://x.example/b\npublished: 2026-02-30\n"
        "source_type: news\npublisher: Test\nlang: en\n---\nBody.\n"
    ),
}

# What the CLI itself writes to stderr before a model is called (see redsearch/research.py).
HEADER_LINE = re.compile(r"corpus: \d+ documents from .+|model \w+: .+|models ready in [\d.]+s"
                         r"|… Planning: .+")  # the run's first progress note


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture
def cli_env(tmp_path: Path, port: int) -> dict[str, str]:
    """The CLI's environment with every tier pointed at a closed port."""
    env = shared_cli_env(tmp_path / "data", f"http://127.0.0.1:{port}/v1")
    for tier in ("PLANNER", "EXECUTOR", "REPORTER"):
        env[f"RED_{tier}_TIMEOUT_S"] = "5"
    env["RED_PLANNER_API_KEY"] = API_KEY
    return env


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for doc_id, spec in VALID_DOCS.items():
        write_doc(folder, doc_id, spec)
    return folder


def redsearch(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "redsearch.cli", *args],
        env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
    )


def error_line(result: subprocess.CompletedProcess[str], *, alone: bool = True) -> str:
    """The run failed cleanly: non-zero exit, no traceback, one error line on stderr.

    With `alone`, stderr holds nothing else; otherwise the only other lines allowed are the
    CLI's own header lines (corpus, models) and the run's first progress note, and the error is
    the last line.
    """
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "Traceback" not in output, output
    lines = result.stderr.splitlines()
    errors = [line for line in lines if line.startswith(ERROR_PREFIX)]
    assert len(errors) == 1, result.stderr
    if alone:
        assert lines == errors, result.stderr
    else:
        assert lines[-1] == errors[0], result.stderr
        others = [line for line in lines[:-1] if not HEADER_LINE.fullmatch(line)]
        assert others == [], result.stderr
    return errors[0]


@pytest.mark.parametrize("question", ["", "   \n\t"], ids=["empty", "whitespace"])
def test_blank_question(cli_env: dict[str, str], docs: Path, question: str) -> None:
    result = redsearch(cli_env, "research", question, "--corpus", str(docs))
    assert "the question is empty" in error_line(result)
    assert result.stdout == ""


def test_oversized_question(cli_env: dict[str, str], docs: Path) -> None:
    question = ("heat pump " * 2000)[:-1] + "?"
    assert len(question) == 20_000
    result = redsearch(cli_env, "research", question, "--corpus", str(docs))
    line = error_line(result)
    assert "20000 characters" in line, line
    assert "limit" in line
    assert len(line) < 200, "the question itself must not be echoed"
    assert result.stdout == ""


def test_missing_corpus_folder(cli_env: dict[str, str], tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"
    result = redsearch(cli_env, "research", QUESTION, "--corpus", str(missing))
    line = error_line(result)
    assert "corpus folder not found" in line
    assert str(missing) in line


def test_corpus_folder_without_documents(cli_env: dict[str, str], tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = redsearch(cli_env, "research", QUESTION, "--corpus", str(empty))
    assert "no .md documents" in error_line(result)


@pytest.mark.parametrize("text", BROKEN_FRONT_MATTER.values(), ids=BROKEN_FRONT_MATTER.keys())
def test_broken_front_matter_names_the_file(
    cli_env: dict[str, str], docs: Path, text: str
) -> None:
    docs.joinpath("zz-broken-doc.md").write_text(text, "utf-8")
    result = redsearch(cli_env, "research", QUESTION, "--corpus", str(docs))
    line = error_line(result)
    assert "zz-broken-doc.md" in line
    assert "front matter" in line
    assert result.stdout == ""


def test_refused_model_endpoint(cli_env: dict[str, str], docs: Path, port: int) -> None:
    result = redsearch(cli_env, "research", QUESTION, "--corpus", str(docs), "--quiet")
    line = error_line(result, alone=False)
    assert f"127.0.0.1:{port}" in line
    assert "unavailable" in line
    assert API_KEY not in result.stdout + result.stderr


def test_bad_setting(cli_env: dict[str, str], docs: Path) -> None:
    cli_env["RED_BUDGET_STEPS"] = "many"
    result = redsearch(cli_env, "research", QUESTION, "--corpus", str(docs))
    line = error_line(result)
    assert "RED_BUDGET_STEPS" in line


@pytest.mark.parametrize("as_of", ["2026-13-01", "yesterday", "31/10/2026"])
def test_bad_as_of_date(cli_env: dict[str, str], docs: Path, as_of: str) -> None:
    result = redsearch(cli_env, "research", QUESTION, "--corpus", str(docs), "--as-of", as_of)
    assert result.returncode == 2
    assert "Traceback" not in result.stdout + result.stderr
    assert "not a date (YYYY-MM-DD)" in result.stderr
    assert result.stderr.startswith("usage: redsearch research"), result.stderr
    assert result.stdout == ""


def test_a_json_path_in_a_missing_folder_is_refused_before_the_run(
        cli_env: dict[str, str], docs: Path, tmp_path: Path) -> None:
    done = redsearch(cli_env, "research", QUESTION, "--corpus", str(docs),
                     "--json", str(tmp_path / "nowhere" / "run.json"))
    assert done.returncode == 2
    assert error_line(done).startswith(f"{ERROR_PREFIX} cannot write --json file")
