"""The embedded default model (issue 43): assembled from pinned chunk packages, refused when
its SHA-256 is not the pinned one, shipped with its licence notice; and routed, taking only
the call kinds of its measured profile (`RED_EMBEDDED_CALLS`)."""

from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path

import pytest

from research_core.errors import ModelUnavailable, SettingsError
from research_core.loop.report.citing import mend
from research_core.models import embedded, profile
from research_core.models.gateway import Gateway
from research_core.models.ledger import Ledger
from research_core.models.openai_tier import OpenAITier
from research_core.models.routed import RoutedTier
from research_core.models.schemas import Decomposition
from research_core.models.tier_factory import describe_tier, embedded_calls
from research_core.protocols import Message
from research_core.runlog import RunLog
from research_core.settings import Settings, TierSettings
from research_core.settings.values import CALL_KINDS, parse_calls
from tests.engine_run import Serve
from tests.fakes.openai_server import Reply

TWO_PARTS = embedded.DEFAULT.parts[:2]


def _model(sha256: str, parts: tuple[tuple[str, str], ...] = TWO_PARTS) -> embedded.EmbeddedModel:
    return embedded.EmbeddedModel(name=f"probe-{sha256[:8]}", title="probe", parts=parts,
                                  sha256=sha256, licence="")


def _sha_of(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def test_chunks_are_assembled_in_order_and_checked(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RED_MODEL_CACHE", str(tmp_path))
    chunks = _model("0" * 64).chunk_paths()
    good = _model(_sha_of(chunks))
    path = Path(embedded.model_path(good))
    assert path.stat().st_size == sum(c.stat().st_size for c in chunks)
    assert embedded.sha256_of(path) == good.sha256
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no partial file left


def test_a_wrong_assembly_is_refused_and_left_nowhere(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RED_MODEL_CACHE", str(tmp_path))
    with pytest.raises(ModelUnavailable, match=r"refusing to load .*probe-11111111\.gguf: "
                                               r"its SHA-256 is [0-9a-f]{64}, not probe's"):
        embedded.model_path(_model("1" * 64))
    assert list(tmp_path.iterdir()) == []


def test_a_tampered_file_in_the_cache_is_refused(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RED_MODEL_CACHE", str(tmp_path))
    model = _model("2" * 64)
    (tmp_path / f"{model.name}.gguf").write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ModelUnavailable, match="refusing to load"):
        embedded.model_path(model)


def test_missing_or_other_versions_of_chunk_packages_are_named() -> None:
    with pytest.raises(ModelUnavailable, match=r"no-such-chunks==1\.0 is not installed"):
        _model("3" * 64, (("no-such-chunks", "1.0"),)).chunk_paths()
    with pytest.raises(ModelUnavailable, match=r"jieba is \S+, not the pinned 0\.1"):
        _model("3" * 64, (("jieba", "0.1"),)).chunk_paths()


def test_the_default_is_an_instruct_model_shipped_with_its_licence() -> None:
    default = embedded.DEFAULT
    assert "instruct" in default.name and len(default.chunk_paths()) == len(default.parts) == 22
    notice = resources.files("research_core.models").joinpath("licences", default.licence)
    text = notice.read_text("utf-8")
    assert default.sha256 in text and "Apache License" in text and "Version 2.0" in text
    assert profile.measured_calls(default.name) <= set(CALL_KINDS)


def test_embedded_calls_setting() -> None:
    assert parse_calls("") is None and parse_calls("measured") is None
    assert parse_calls("all") == frozenset(CALL_KINDS) and parse_calls("NONE") == frozenset()
    assert parse_calls(" decompose, plan_query ") == frozenset({"decompose", "plan_query"})
    with pytest.raises(SettingsError, match="unknown call kinds summary"):
        Settings.from_env({"RED_EMBEDDED_CALLS": "decompose,summary"})


async def test_a_routed_tier_takes_only_its_calls(serve: Serve) -> None:
    server = await serve(lambda body: Reply(
        '{"subquestions": [{"question": "How many hives were counted in 2026?", "value": 0.9}]}'))
    inner = OpenAITier(TierSettings(model="m", base_url=server.base_url, max_retries=0))
    log = RunLog()
    gateway = Gateway({"planner": RoutedTier(inner, frozenset({"decompose"}))},
                      Ledger(prices={}), log)
    ask = [Message("user", "split it")]
    try:
        skipped = await gateway.try_structured("planner", "plan_query", ask, Decomposition)
        taken = await gateway.try_structured("planner", "decompose", ask, Decomposition)
    finally:
        await inner.aclose()
    assert skipped is None and len(server.requests) == 1
    assert taken is not None and taken.subquestions[0].question.startswith("How many hives")
    [fallback] = log.of_kind("fallback")
    assert "not used for plan_query (RED_EMBEDDED_CALLS)" in fallback.message


def test_an_uncited_figure_gets_its_source_or_goes() -> None:
    stated = {1: "Sales rose 12% to 48,000 units in Q3 2026.",
              2: "Prices fell 3.5% over the year."}
    report = ("Heat pumps sold better.\n- Sales rose 12% to 48,000 units in Q3.\n"
              "- Prices fell 3.5%.\n- Installers hired 900 people.\n"
              "Imports grew 7% [2].")
    mended = mend(report, stated)
    assert mended == ("Heat pumps sold better.\n- Sales rose 12% to 48,000 units in Q3 [1].\n"
                      "- Prices fell 3.5% [2].\nImports grew 7% [2].")


def test_the_log_line_says_which_calls_the_embedded_model_takes() -> None:
    none = describe_tier("planner", TierSettings(), frozenset())
    some = describe_tier("planner", TierSettings(), frozenset({"report", "decompose"}))
    assert none.startswith("planner: no model call") and "RED_EMBEDDED_CALLS" in none
    assert some == ("planner: gguf model=bundled (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M) for "
                    "decompose, report")
    assert embedded_calls(Settings()) == profile.measured_calls(embedded.DEFAULT.name)
