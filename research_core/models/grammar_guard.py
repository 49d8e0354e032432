"""Keeps JSON schemas that llama.cpp's grammar compiler refuses away from a local model.

llama-cpp-python turns a JSON schema into a GBNF grammar; llama.cpp then compiles it when
sampling starts. A grammar it refuses (for example a string of `maxLength` 1500: "number of
rules that are going to be repeated multiplied by the new repetition exceeds sane defaults")
comes back as a null sampler, and sampling with it kills the whole process (SIGSEGV).

`GrammarGuard` compiles each schema once, up front, with the model's own vocabulary. A schema
that does not compile is replaced by the closest form that does: its length bounds lowered
step by step, then dropped, then no schema at all (plain JSON). The reply is still validated
against the full schema afterwards, so nothing the engine relies on is lost.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llama_cpp import Llama

log = logging.getLogger(__name__)

Schema = dict[str, Any]
Compiles = Callable[[str], bool]
LENGTH_KEYS = ("maxLength", "maxItems")
SMALLEST_CAP = 16


class GrammarGuard:
    """The grammar-safe form of every schema sent to one local model (cached)."""

    def __init__(self, compiles: Compiles, *, model: str) -> None:
        self._compiles = compiles
        self._model = model
        self._safe: dict[str, Schema | None] = {}
        self._lock = threading.Lock()

    def prepare(self, schemas: Mapping[str, Schema]) -> None:
        """Check every named schema now (at load), so that no refusal happens mid-run."""
        for name, schema in schemas.items():
            self.safe(schema, name)

    def safe(self, schema: Schema, name: str) -> Schema | None:
        """`schema` when it compiles, else the form that does (None: plain JSON, no schema)."""
        key = json.dumps(schema, sort_keys=True)
        with self._lock:
            if key not in self._safe:
                self._safe[key] = self._find_safe(schema, name)
            return self._safe[key]

    def _find_safe(self, schema: Schema, name: str) -> Schema | None:
        if self._ok(schema):
            return schema
        for cap in _caps(schema):
            capped = with_length_cap(schema, cap)
            if self._ok(capped):
                log.warning("%s: llama.cpp refuses the grammar of %s; sending it with length "
                            "bounds of at most %d (replies are still validated against the "
                            "full schema)", self._model, name, cap)
                return capped
        unbounded = with_length_cap(schema, None)
        if self._ok(unbounded):
            log.warning("%s: llama.cpp refuses the grammar of %s; sending it without length "
                        "bounds (replies are still validated)", self._model, name)
            return unbounded
        log.warning("%s: llama.cpp refuses every form of the grammar of %s; asking for plain "
                    "JSON (replies are still validated)", self._model, name)
        return None

    def _ok(self, schema: Schema) -> bool:
        from llama_cpp.llama_grammar import json_schema_to_gbnf

        try:
            grammar = json_schema_to_gbnf(json.dumps(schema))
        except (ValueError, KeyError, TypeError, RecursionError):
            return False  # llama-cpp-python's own converter gave up: not sendable either
        return self._compiles(grammar)


def _caps(schema: Schema) -> list[int]:
    """Length caps to try, largest first: halving from the schema's largest bound."""
    largest = max(_bounds(schema), default=0)
    caps: list[int] = []
    cap = largest // 2
    while cap >= SMALLEST_CAP:
        caps.append(cap)
        cap //= 2
    return caps


def _bounds(node: Any) -> Iterator[int]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in LENGTH_KEYS and isinstance(value, int):
                yield value
            else:
                yield from _bounds(value)
    elif isinstance(node, list):
        for value in node:
            yield from _bounds(value)


def with_length_cap(schema: Schema, cap: int | None) -> Schema:
    """A copy whose `maxLength`/`maxItems` are at most `cap` (None: removed)."""
    capped = copy.deepcopy(schema)
    _cap(capped, cap)
    return capped


def _cap(node: Any, cap: int | None) -> None:
    if isinstance(node, dict):
        for key in list(node):
            if key in LENGTH_KEYS and isinstance(node[key], int):
                if cap is None:
                    del node[key]
                else:
                    node[key] = min(node[key], cap)
            else:
                _cap(node[key], cap)
    elif isinstance(node, list):
        for value in node:
            _cap(value, cap)


def llama_compiles(llama: Llama) -> Compiles:
    """Whether llama.cpp compiles a GBNF grammar for this model's vocabulary (no sampling)."""
    import llama_cpp

    vocab = llama._model.vocab

    def compiles(grammar: str) -> bool:
        with _quiet_stderr():  # llama.cpp prints a refused grammar in full
            sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode("utf-8"),
                                                           b"root")
        if not sampler:
            return False
        llama_cpp.llama_sampler_free(sampler)
        return True

    return compiles


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence file descriptor 2 (C code writes there directly) for the block."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
