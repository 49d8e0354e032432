"""No schema reaches llama.cpp in a form its grammar compiler refuses (a refused grammar makes
llama-cpp-python sample with a null grammar, and the process dies with SIGSEGV).

The guard's logic is tested with a stand-in compiler; the bundled model's real compiler and
sampler are tested under `-m gguf`, in a child process, so that a crash is a failed test."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from typing import Any, cast

import pytest
from pydantic import BaseModel, Field

from research_core.models.gateway import Gateway
from research_core.models.grammar_guard import GrammarGuard, with_length_cap
from research_core.models.ledger import Ledger
from research_core.models.llama_tier import LlamaTier, ModelLock
from research_core.models.schemas import FollowUpOut, json_schema, prompt_schemas
from research_core.protocols import Message
from research_core.runlog import RunLog
from tests.test_tiers import FakeLlama

NOTES = {"type": "array", "maxItems": 40, "items": {"type": "string", "maxLength": 300}}
LONG: dict[str, Any] = {
    "type": "object", "required": ["answer"],
    "properties": {"answer": {"type": "string", "maxLength": 5000}, "notes": NOTES}}


def below(limit: int) -> tuple[GrammarGuard, list[str]]:
    """A guard whose 'compiler' refuses grammars of `limit` characters or more."""
    seen: list[str] = []

    def compiles(grammar: str) -> bool:
        seen.append(grammar)
        return len(grammar) < limit

    return GrammarGuard(compiles, model="test"), seen


def test_a_schema_that_compiles_is_sent_as_it_is() -> None:
    guard, seen = below(10**9)
    schema = json_schema(FollowUpOut)
    assert guard.safe(schema, "FollowUpOut") is schema
    assert guard.safe(dict(schema), "FollowUpOut") is schema and len(seen) == 1  # cached


def test_a_refused_schema_is_sent_with_lower_bounds_and_the_log_says_so(
        caplog: pytest.LogCaptureFixture) -> None:
    guard, _ = below(12_000)
    with caplog.at_level(logging.WARNING, "research_core.models.grammar_guard"):
        safe = guard.safe(LONG, "Long")
    assert safe is not None
    assert safe["properties"]["answer"]["maxLength"] < 5000
    assert safe["properties"]["notes"]["maxItems"] <= 40
    assert LONG["properties"]["answer"]["maxLength"] == 5000  # the original is untouched
    [record] = caplog.records
    assert "llama.cpp refuses the grammar of Long" in record.getMessage()
    assert "still validated" in record.getMessage()


def test_a_reply_cut_by_the_token_cap_still_counts_as_json_but_garbage_does_not() -> None:
    assert _parses_or_was_cut('{"a": ["x", "y\\"z')
    assert _parses_or_was_cut('{"a": {"b":')
    assert not _parses_or_was_cut('{"a": ]')
    assert not _parses_or_was_cut("no json")


def test_when_no_bound_helps_the_bounds_go_then_the_schema() -> None:
    unbounded = with_length_cap(LONG, None)
    assert "maxLength" not in json.dumps(unbounded) and "maxItems" not in json.dumps(unbounded)
    guard, _ = below(len("x"))  # refuses everything
    assert guard.safe(LONG, "Long") is None


async def test_the_tier_sends_the_safe_form_and_plain_json_when_nothing_compiles() -> None:
    llama = FakeLlama()
    guard, _ = below(12_000)
    tier = LlamaTier(cast(Any, llama), ModelLock(), model="fake", guard=guard)
    ask = [Message("user", "Answer in JSON.")]
    await tier.complete(ask, schema=LONG, schema_name="Long", max_tokens=8)
    sent = llama.calls[-1]["response_format"]
    assert sent["type"] == "json_object" and sent["schema"] == guard.safe(LONG, "Long")
    assert sent["schema"]["properties"]["answer"]["maxLength"] < 5000

    refusing = LlamaTier(cast(Any, llama), ModelLock(), model="fake", guard=below(1)[0])
    await refusing.complete(ask, schema=LONG, schema_name="Long", max_tokens=8)
    assert llama.calls[-1]["response_format"] == {"type": "json_object"}


def test_prepare_checks_every_schema_that_prompts_yaml_names() -> None:
    guard, seen = below(10**9)
    schemas = {name: json_schema(model) for name, model in prompt_schemas().items()}
    guard.prepare(schemas)
    assert len(seen) == len({json.dumps(s, sort_keys=True) for s in schemas.values()})
    assert set(prompt_schemas()) >= {"decompose", "plan_query", "score_hits", "summarise",
                                     "reflect", "check_claims", "followup",
                                     "monolithic"}


async def test_the_gateway_refuses_a_shape_that_prompts_yaml_does_not_name() -> None:
    class Unlisted(BaseModel):
        text: str = Field(max_length=10)

    gateway = Gateway({}, Ledger({}), RunLog())
    with pytest.raises(ValueError, match=r"Unlisted is not a schema named in prompts\.yaml"):
        await gateway.try_structured("planner", "decompose", [], Unlisted)


# --- the bundled model's own grammar compiler and sampler ----------------------------------

SAMPLE_EVERY_SCHEMA = r'''
import asyncio, json, sys
from research_core.models.grammar_guard import llama_compiles
from research_core.models.llama_tier import gemma_model_path, load_llama
from research_core.protocols import Message
from research_core.models.schemas import json_schema, prompt_schemas
from research_core.settings import Settings
from research_core.models.tier_factory import build_tiers
from llama_cpp.llama_grammar import json_schema_to_gbnf

async def main() -> None:
    tier = build_tiers(Settings.from_env({"RED_EXECUTOR_MODEL": gemma_model_path()}))["executor"]
    loaded = load_llama(gemma_model_path(), n_ctx=Settings().gguf_context, n_threads=None)
    compiles = llama_compiles(loaded.llama)
    for prompt, model in prompt_schemas().items():
        schema = json_schema(model)
        raw = compiles(json_schema_to_gbnf(json.dumps(schema)))
        ask = [Message("user", "Reply with one small JSON object.")]
        done = await tier.complete(ask, schema=schema, schema_name=model.__name__,
                                   max_tokens=int(sys.argv[1]))
        print(json.dumps({"prompt": prompt, "raw_compiles": raw, "text": done.text}), flush=True)
    huge = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 6000}},
            "required": ["a"]}
    done = await tier.complete([Message("user", "JSON:")], schema=huge, schema_name="Huge",
                               max_tokens=int(sys.argv[1]))
    print(json.dumps({"prompt": "huge", "raw_compiles": False, "text": done.text}), flush=True)

asyncio.run(main())
'''


@pytest.mark.gguf
@pytest.mark.timeout(600)
def test_every_prompt_schema_compiles_and_samples_on_the_bundled_model() -> None:
    """Each schema of prompts.yaml compiles as it is, and the real `LlamaTier` samples a
    reply that parses; a schema llama.cpp would refuse (maxLength 6000) is sent in a form
    that compiles. In a child process: a segfault fails this test instead of ending pytest."""
    done = subprocess.run([sys.executable, "-c", SAMPLE_EVERY_SCHEMA, "96"],
                          capture_output=True, text=True, timeout=560, check=False)
    assert done.returncode == 0, f"the model process died ({done.returncode}): " \
                                 f"{done.stderr[-2000:]}"
    replies = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert {r["prompt"] for r in replies} == {*prompt_schemas(), "huge"}
    for reply in replies:
        if reply["prompt"] != "huge":
            assert reply["raw_compiles"], f"{reply['prompt']}: its schema does not compile"
        assert reply["text"].lstrip().startswith("{"), reply
        assert _parses_or_was_cut(reply["text"]), f"{reply['prompt']}: {reply['text']!r}"
    assert "llama.cpp refuses the grammar of Huge" in done.stderr


def _parses_or_was_cut(text: str) -> bool:
    """A whole JSON object, or one cut off by the token cap: then closing its open string,
    arrays and objects makes it parse (a grammar-constrained reply is always a JSON prefix)."""
    for candidate in (text, _closed(text)):
        try:
            json.loads(candidate)
        except json.JSONDecodeError:
            continue
        return True
    return False


def _closed(text: str) -> str:
    stack: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            in_string = escaped or char != '"'
            escaped = not escaped and char == "\\"
        elif char == '"':
            in_string = True
        elif char in "[{":
            stack.append("]" if char == "[" else "}")
        elif char in "]}":
            stack.pop()
    closed = text.rstrip() + ('"' if in_string else "")
    closed = closed.rstrip(",") + ("null" if closed.rstrip().endswith(":") else "")
    return closed + "".join(reversed(stack))
