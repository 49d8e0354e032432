"""`redsearch models check` (issue 43): the suite on the code path, then once per call kind
with the model taking that kind alone, through the real openai client against the scripted
fake endpoint; the table says where the model passed more groups."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from redsearch.cli import main
from redsearch.harness.model_check import check
from tests.conftest import scripted_settings
from tests.engine_run import Serve
from tests.scripted import Script
from tests.test_evaluate import make_suite


def _args(suite: Path, calls: str) -> argparse.Namespace:
    return argparse.Namespace(suite=str(suite), model="", calls=calls, modes="standard",
                              tasks="")


async def test_each_kind_is_measured_against_the_code_path(
        tmp_path: Path, serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    make_suite(tmp_path)
    server = await serve(Script())  # its report says "from the sources": group R1
    settings = scripted_settings(server.base_url, max_steps=4)
    assert await check(_args(tmp_path, "report,decompose"), settings) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split("  ")[0]: line.split() for line in lines[2:]}
    assert rows["code path"][2:4] == ["—", "0"]  # no call; R1 needs the model's words
    assert rows["report"][1] == "1/1" and rows["report"][2:4] == ["1", "+1"]
    assert " ".join(rows["report"][-2:]) == "better: profile"
    assert rows["decompose"][2:4] == ["0", "+0"] and rows["decompose"][-2:] == ["not", "better"]
    reports = [r for r in server.requests if "report" in str(r.get("messages", ""))[:4000]]
    assert reports, "the report kind reached the endpoint"


def test_an_unknown_call_kind_is_one_line(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    make_suite(tmp_path)
    assert main(["models", "check", "--suite", str(tmp_path), "--calls", "summary"]) == 2
    assert "unknown call kinds summary" in capsys.readouterr().err
