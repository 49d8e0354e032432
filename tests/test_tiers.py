"""Model tiers: the OpenAI tier against a local fake server, the GGUF tier on the bundled model."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, cast

import pytest

from research_core.errors import ModelUnavailable, SettingsError
from research_core.models.grammar_guard import GrammarGuard
from research_core.models.llama_tier import (
    LlamaTier,
    ModelLock,
    gemma_prompt,
    load_llama,
)
from research_core.models.openai_tier import OpenAITier
from research_core.models.tier_factory import aclose_tiers, build_tiers, describe_tier
from research_core.protocols import Message
from research_core.settings import Secret, Settings, TierSettings
from research_core.settings.values import CALL_KINDS
from tests.engine_run import Serve
from tests.fakes.openai_server import Reply

API_KEY = "sk-test-DO-NOT-SHOW-4f9a2c"
ASK = [Message("system", "You answer briefly."), Message("user", "Say hello.")]
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}

MakeTier = Callable[..., OpenAITier]


@pytest.fixture
async def make_tier() -> AsyncIterator[MakeTier]:
    tiers: list[OpenAITier] = []

    def make(base_url: str, **overrides: Any) -> OpenAITier:
        fields: dict[str, Any] = {"model": "fake-model", "api_key": Secret(API_KEY)}
        tier = OpenAITier(TierSettings(base_url=base_url, **(fields | overrides)), name="planner")
        tiers.append(tier)
        return tier

    yield make
    for tier in tiers:
        await tier.aclose()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# --- OpenAI-compatible tier -------------------------------------------------------------


async def test_text_and_usage_round_trip(serve: Serve, make_tier: MakeTier) -> None:
    server = await serve(lambda body: Reply("hello there", prompt_tokens=17, completion_tokens=3))
    tier = make_tier(server.base_url)

    done = await tier.complete(ASK, schema=None, schema_name="free", max_tokens=50)

    assert (done.text, done.prompt_tokens, done.completion_tokens) == ("hello there", 17, 3)
    assert done.model == "fake-model" == tier.model
    [body] = server.requests
    assert "response_format" not in body
    assert body["temperature"] == 0
    assert body["max_tokens"] == 50
    assert body["messages"] == [
        {"role": "system", "content": "You answer briefly."},
        {"role": "user", "content": "Say hello."},
    ]


async def test_json_schema_reaches_server(serve: Serve, make_tier: MakeTier) -> None:
    server = await serve(lambda body: '{"ok": true}')
    tier = make_tier(server.base_url)

    done = await tier.complete(ASK, schema=SCHEMA, schema_name="verdict", max_tokens=20)

    assert json.loads(done.text) == {"ok": True}
    assert done.prompt_tokens > 0 and done.completion_tokens > 0
    [body] = server.requests_for("verdict")
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": False},
    }


async def test_rate_limit_is_retried_after_retry_after(serve: Serve, make_tier: MakeTier) -> None:
    def handler(body: dict[str, Any]) -> Reply:
        if len(server.requests) == 1:
            return Reply("slow down", status=429, retry_after_s=0.05)
        return Reply("fine")

    server = await serve(handler)
    tier = make_tier(server.base_url, max_retries=2)

    started = time.perf_counter()
    done = await tier.complete(ASK, schema=None, schema_name="free", max_tokens=10)
    elapsed = time.perf_counter() - started

    assert done.text == "fine"
    assert len(server.requests) == 2
    # Retry-After (0.05 s) was honoured instead of the client's 0.375-0.5 s first backoff.
    assert 0.05 <= elapsed < 0.35


async def test_rate_limit_exhausted_is_model_unavailable(
    serve: Serve, make_tier: MakeTier
) -> None:
    server = await serve(lambda body: Reply("quota", status=429, retry_after_s=0.01))
    tier = make_tier(server.base_url, max_retries=1)

    with pytest.raises(ModelUnavailable) as info:
        await tier.complete(ASK, schema=None, schema_name="free", max_tokens=10)

    assert len(server.requests) == 2
    message = str(info.value)
    assert "RateLimitError" in message and "fake-model" in message
    assert "127.0.0.1" in message and API_KEY not in message and "\n" not in message


async def test_refused_connection_is_model_unavailable(make_tier: MakeTier) -> None:
    port = free_port()
    tier = make_tier(f"http://127.0.0.1:{port}/v1", max_retries=0, timeout_s=5)

    with pytest.raises(ModelUnavailable) as info:
        await tier.complete(ASK, schema=None, schema_name="free", max_tokens=10)

    message = str(info.value)
    assert f"127.0.0.1:{port}" in message and "fake-model" in message
    assert API_KEY not in message and "\n" not in message


async def test_auth_error_is_model_unavailable(serve: Serve, make_tier: MakeTier) -> None:
    server = await serve(lambda body: Reply("bad key", status=401))
    tier = make_tier(server.base_url)

    with pytest.raises(ModelUnavailable, match="AuthenticationError") as info:
        await tier.complete(ASK, schema=None, schema_name="free", max_tokens=10)

    assert API_KEY not in str(info.value)
    assert len(server.requests) == 1  # 401 is not retried


async def test_a_refused_request_is_a_one_line_run_error(
        serve: Serve, make_tier: MakeTier) -> None:
    server = await serve(lambda body: Reply("context too long", status=400))
    tier = make_tier(server.base_url)

    with pytest.raises(ModelUnavailable, match=r"BadRequestError.*context too long"):
        await tier.complete(ASK, schema=None, schema_name="free", max_tokens=10)


async def test_missing_usage_counts_zero(serve: Serve, make_tier: MakeTier) -> None:
    server = await serve(lambda body: "ok")
    tier = make_tier(server.base_url)
    original = server._completion

    def without_usage(body: dict[str, Any], reply: Reply, prompt: int) -> dict[str, Any]:
        payload = original(body, reply, prompt)
        del payload["usage"]
        return payload

    server._completion = without_usage  # type: ignore[method-assign]
    done = await tier.complete(ASK, schema=None, schema_name="free", max_tokens=10)

    assert (done.text, done.prompt_tokens, done.completion_tokens) == ("ok", 0, 0)


async def test_empty_secret_sends_placeholder_key(serve: Serve, make_tier: MakeTier) -> None:
    server = await serve(lambda body: "ok")
    tier = make_tier(server.base_url, api_key=Secret(""))

    done = await tier.complete(ASK, schema=None, schema_name="free", max_tokens=10)

    assert done.text == "ok"


# --- Settings and descriptions never show the key ------------------------------------------


def test_settings_never_show_the_api_key() -> None:
    url = "https://api.example.com/v1"
    tier = TierSettings(model="gpt-x", base_url=url, api_key=Secret(API_KEY))
    settings = Settings(tiers={"planner": tier, "executor": tier, "reporter": tier})
    from_env = Settings.from_env({"RED_PLANNER_API_KEY": API_KEY, "RED_PLANNER_BASE_URL": url,
                                  "RED_PLANNER_MODEL": "gpt-x"})

    shown = [repr(tier), str(tier), repr(settings), str(settings), repr(from_env), f"{settings}"]
    shown.append(describe_tier("planner", tier))

    assert all(API_KEY not in text for text in shown)
    assert "api.example.com" in describe_tier("planner", tier)
    assert from_env.tiers["planner"].api_key == API_KEY  # still usable by the client


async def test_openai_tier_repr_hides_key(make_tier: MakeTier) -> None:
    tier = make_tier("https://user:pw@api.example.com:8443/v1")

    assert API_KEY not in repr(tier)
    assert tier.host == "api.example.com:8443"
    assert "pw" not in repr(tier)


async def test_build_tiers_uses_openai_when_base_url_set(serve: Serve) -> None:
    server = await serve(lambda body: "ok")
    tier = TierSettings(model="m", base_url=server.base_url, api_key=Secret(API_KEY))
    tiers = build_tiers(Settings(tiers={"planner": tier, "executor": tier, "reporter": tier}))
    try:
        assert set(tiers) == {"planner", "executor", "reporter"}
        assert all(isinstance(t, OpenAITier) for t in tiers.values())
        done = await tiers["reporter"].complete(ASK, schema=None, schema_name="r", max_tokens=5)
        assert done.text == "ok"
    finally:
        await aclose_tiers(tiers)


def test_missing_gguf_path_is_model_unavailable(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.gguf")

    with pytest.raises(ModelUnavailable, match=r"cannot load GGUF model at .*nope\.gguf"):
        load_llama(missing, n_ctx=512, n_threads=1)
    tier = TierSettings(model=missing)
    with pytest.raises(ModelUnavailable, match="no such file"):
        build_tiers(Settings(tiers={"planner": tier, "executor": tier, "reporter": tier}))


# --- GGUF tier plumbing, without a model ---------------------------------------------------


class FakeLlama:
    """Stands in for llama_cpp.Llama: records calls and notices overlapping ones."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.active = 0
        self.overlapped = False
        self._guard = threading.Lock()

    def create_chat_completion(self, **kwargs: Any) -> dict[str, Any]:
        with self._guard:
            self.active += 1
            self.overlapped |= self.active > 1
            self.calls.append(kwargs)
        time.sleep(0.02)
        with self._guard:
            self.active -= 1
        usage = {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}
        return {"choices": [{"message": {"content": '{"ok": true}'}}], "usage": usage}


def fake_tier(llama: FakeLlama, lock: ModelLock) -> LlamaTier:
    return LlamaTier(cast(Any, llama), lock, model="fake-gguf",
                     guard=GrammarGuard(lambda grammar: True, model="fake-gguf"))


async def test_llama_tier_request_and_usage() -> None:
    llama = FakeLlama()
    tier = fake_tier(llama, ModelLock())

    done = await tier.complete(ASK, schema=SCHEMA, schema_name="v", max_tokens=24)
    await tier.complete(ASK, schema=None, schema_name="free", max_tokens=8)

    assert (done.text, done.prompt_tokens, done.completion_tokens) == ('{"ok": true}', 7, 2)
    assert done.model == "fake-gguf"
    with_schema, free = llama.calls
    assert with_schema["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert with_schema["temperature"] == 0.0 and with_schema["max_tokens"] == 24
    assert with_schema["messages"][0] == {"role": "system", "content": "You answer briefly."}
    assert free["response_format"] is None


async def test_tiers_sharing_a_lock_never_overlap() -> None:
    llama, lock = FakeLlama(), ModelLock()
    tiers = [fake_tier(llama, lock) for _ in range(3)]

    await asyncio.gather(
        *(t.complete(ASK, schema=None, schema_name="f", max_tokens=4) for t in tiers * 2)
    )

    assert len(llama.calls) == 6 and not llama.overlapped


def test_lock_serialises_across_event_loops() -> None:
    llama, lock = FakeLlama(), ModelLock()
    tier = fake_tier(llama, lock)

    async def burst() -> None:
        calls = (tier.complete(ASK, schema=None, schema_name="f", max_tokens=4) for _ in range(3))
        await asyncio.gather(*calls)

    threads = [threading.Thread(target=asyncio.run, args=(burst(),)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(llama.calls) == 6 and not llama.overlapped


def test_gemma_prompt_layout() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "Again"},
        {"role": "user", "content": "Twice"},
    ]

    assert gemma_prompt(messages) == (
        "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
        "<start_of_turn>model\nHello<end_of_turn>\n"
        "<start_of_turn>user\nAgain\n\nTwice<end_of_turn>\n"
        "<start_of_turn>model\n"
    )
    assert gemma_prompt([{"role": "system", "content": "S"}]) == (
        "<start_of_turn>user\nS<end_of_turn>\n<start_of_turn>model\n"
    )


# --- Bundled GGUF model --------------------------------------------------------------------


EVERY_CALL = Settings(embedded_calls=frozenset(CALL_KINDS))  # the embedded model takes all


@pytest.mark.gguf
def test_bundled_model_is_loaded_once() -> None:
    first, second = build_tiers(EVERY_CALL), build_tiers(EVERY_CALL)

    tiers = [*first.values(), *second.values()]
    assert all(isinstance(t, LlamaTier) for t in tiers)
    assert len({id(t.llama) for t in tiers if isinstance(t, LlamaTier)}) == 1
    assert first["planner"].model == "bundled:qwen2.5-coder-1.5b-instruct-q4_k_m"


@pytest.mark.gguf
async def test_bundled_json_schema_call() -> None:
    """The embedded default through its own chat template (from the GGUF) and a grammar."""
    tier = build_tiers(EVERY_CALL)["executor"]
    assert isinstance(tier, LlamaTier) and tier.llama.metadata["tokenizer.chat_template"]
    ask = [Message("user", 'Is the sky blue on a clear day? Answer as JSON {"ok": true|false}.')]

    done = await tier.complete(ask, schema=SCHEMA, schema_name="verdict", max_tokens=32)

    assert isinstance(json.loads(done.text)["ok"], bool)
    assert done.prompt_tokens > 0 and done.completion_tokens > 0


@pytest.mark.gguf
async def test_bundled_tiers_share_one_lock_under_concurrency() -> None:
    tiers = list(build_tiers(EVERY_CALL).values())

    async def ask(tier: Any) -> str:
        done = await tier.complete(ASK, schema=SCHEMA, schema_name="v", max_tokens=16)
        return str(done.text)

    texts = await asyncio.gather(*(ask(t) for t in tiers))

    assert all(isinstance(json.loads(text)["ok"], bool) for text in texts)


@pytest.mark.gguf
def test_corrupt_gguf_is_model_unavailable(tmp_path: Path) -> None:
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf file" * 100)

    with pytest.raises(ModelUnavailable, match=r"cannot load GGUF model at .*junk\.gguf"):
        load_llama(str(junk), n_ctx=512, n_threads=1)


def test_a_base_url_without_a_model_name_is_refused() -> None:
    with pytest.raises(SettingsError, match="RED_EXECUTOR_MODEL"):
        Settings.from_env({"RED_EXECUTOR_BASE_URL": "https://api.example.com/v1"})


def test_a_prompt_past_the_context_is_an_unusable_answer_not_a_crash() -> None:
    """llama.cpp refuses a prompt longer than its context; the tier answers empty (the
    gateway then falls back) instead of failing the run. Other errors still raise."""
    from research_core.models.llama_tier import overflows

    assert overflows("Requested tokens (4109) exceed context window of 4096")
    assert not overflows("some other failure")
