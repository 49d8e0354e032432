"""Every model call of a run goes through here: JSON validation, one retry, then a fallback.

A model mistake (unparseable or invalid output) goes back to the model once with the error;
if the second answer is still unusable, the caller's fallback keeps the run going. Each call
is written to the token ledger and the run log. Text written for a purpose that has a stream
(`stream_to`: the report, a follow-up's answer) is shown as the tier writes it when the tier
can stream; an attempt whose text is not used is discarded from the stream.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from research_core import metrics
from research_core.models.ledger import Ledger
from research_core.models.no_model import NoModelTier
from research_core.models.prompts import max_tokens as prompt_max_tokens
from research_core.models.prompts import retry_message
from research_core.models.routed import RoutedTier
from research_core.models.schemas import is_prompt_schema, json_schema
from research_core.protocols import Completion, Message, ModelTier, PartStream, StreamingTier
from research_core.runlog import RunLog

T = TypeVar("T", bound=BaseModel)
T_out = TypeVar("T_out")
Check = Callable[[T], str | None]


class UnusableOutput(Exception):
    """The model's output failed parsing or validation (a model mistake, not a bug)."""


@dataclass
class Gateway:
    tiers: Mapping[str, ModelTier]
    ledger: Ledger
    log: RunLog
    json_max_tokens: int = 384
    permit: Callable[[], bool] = lambda: True
    streams: dict[str, PartStream] = field(default_factory=dict)

    def stream_to(self, purpose: str, stream: PartStream | None) -> None:
        """Show the text of `purpose`'s calls through `stream` while it is written (None:
        stop showing it)."""
        if stream is None:
            self.streams.pop(purpose, None)
        else:
            self.streams[purpose] = stream

    async def structured(
        self, tier: str, purpose: str, messages: list[Message], model: type[T],
        fallback: Callable[[], T], check: Check[T] | None = None, max_tokens: int = 0,
    ) -> T:
        """A validated `model` instance from the tier, or the fallback's."""
        value = await self.try_structured(tier, purpose, messages, model, check, max_tokens)
        return fallback() if value is None else value

    async def try_structured(
        self, tier: str, purpose: str, messages: list[Message], model: type[T],
        check: Check[T] | None = None, max_tokens: int = 0,
    ) -> T | None:
        """A validated `model` instance, or None after two unusable answers."""
        if not is_prompt_schema(model):  # a bug: local models only check the listed shapes
            raise ValueError(f"{model.__name__} is not a schema named in prompts.yaml")
        def parse(text: str) -> T:
            value = _parse_model(text, model)
            problem = check(value) if check else None
            if problem:
                raise UnusableOutput(problem)
            return value

        return await self._with_retry(tier, purpose, messages, parse,
                                      schema=json_schema(model), schema_name=model.__name__,
                                      max_tokens=max_tokens or prompt_max_tokens(purpose))

    async def text(
        self, tier: str, purpose: str, messages: list[Message], max_tokens: int,
        fallback: Callable[[], str], check: Callable[[str], str | None],
    ) -> str:
        """Free text from the tier that passes `check`, or the fallback's."""
        def parse(text: str) -> str:
            problem = check(text)
            if problem:
                raise UnusableOutput(problem)
            return text

        text = await self._with_retry(tier, purpose, messages, parse, max_tokens=max_tokens)
        return fallback() if text is None else text

    async def _with_retry(
        self, tier: str, purpose: str, messages: list[Message],
        parse: Callable[[str], T_out], *,
        schema: dict[str, object] | None = None, schema_name: str = "text",
        max_tokens: int | None = None,
    ) -> T_out | None:
        conversation = list(messages)
        if (why := self._no_model(tier, purpose)) is not None:
            metrics.FALLBACKS.labels(purpose, "no_model").inc()
            self.log.emit("fallback", f"{tier}/{purpose}: {why}, using the fallback", tier=tier,
                          purpose=purpose)
            return None
        for attempt in (1, 2):
            if not self.permit():
                metrics.model_refused(tier)
                metrics.FALLBACKS.labels(purpose, "budget").inc()
                self.log.emit("fallback", f"{tier}/{purpose}: no model call left in the "
                              "budget, using the fallback", tier=tier, purpose=purpose)
                return None
            done = await self._call(tier, purpose, conversation, schema, schema_name, max_tokens)
            try:
                value = parse(done.text)
            except UnusableOutput as exc:
                error = str(exc)
                await self._discard(purpose)
            else:
                self._count(tier, "ok")
                return value
            self.ledger.mark_last(f"invalid-{attempt}")
            self._count(tier, "retried" if attempt == 1 else "fallback")
            self.log.emit("model-err", f"{tier}/{purpose} attempt {attempt}: {error[:160]}",
                          tier=tier, purpose=purpose, error=error)
            conversation += [Message("assistant", done.text[:2000]), retry_message(error)]
        metrics.FALLBACKS.labels(purpose, "unusable").inc()
        self.log.emit("fallback", f"{tier}/{purpose}: two unusable answers, using the fallback",
                      tier=tier, purpose=purpose)
        return None

    def _no_model(self, tier: str, purpose: str) -> str | None:
        """Why the tier takes no model call for `purpose`, or None when it does."""
        model = self.tiers[tier]
        if isinstance(model, NoModelTier):
            return f"no model (RED_{tier.upper()}_MODEL=none)"
        if isinstance(model, RoutedTier) and not model.takes(purpose):
            return f"the embedded model is not used for {purpose} (RED_EMBEDDED_CALLS)"
        return None

    def _count(self, tier: str, outcome: str) -> None:
        """The last call (the ledger's last entry) with what became of it."""
        entry = self.ledger.entries[-1]
        metrics.model_call(tier, outcome, (entry.prompt_tokens, entry.completion_tokens),
                           entry.cost_usd)

    async def _call(
        self, tier: str, purpose: str, messages: list[Message],
        schema: dict[str, object] | None, schema_name: str, max_tokens: int | None,
    ) -> Completion:
        # the call's number tells a crash that recurs at one call from kills at random ones
        await self.log.doing(f"{tier}/{purpose} (model call {len(self.ledger.entries) + 1})")
        started = time.monotonic()
        try:
            done = await self._generate(tier, purpose, messages, schema, schema_name,
                                        max_tokens or self.json_max_tokens)
        except Exception:
            metrics.MODEL_CALLS.labels(tier, "error").inc()
            raise
        finally:
            metrics.MODEL_SECONDS.labels(tier).observe(time.monotonic() - started)
        entry = self.ledger.record(tier, done.model, purpose, self.log.step,
                                   (done.prompt_tokens, done.completion_tokens))
        self.log.emit("model", f"{tier}/{purpose} {entry.prompt_tokens}+"
                      f"{entry.completion_tokens} tokens", tier=tier, purpose=purpose,
                      prompt_tokens=entry.prompt_tokens,
                      completion_tokens=entry.completion_tokens)
        return done

    async def _generate(self, tier: str, purpose: str, messages: list[Message],
                        schema: dict[str, object] | None, schema_name: str,
                        limit: int) -> Completion:
        """The tier's completion, streamed to the purpose's stream when it has one."""
        model, stream = self.tiers[tier], self.streams.get(purpose)
        model = model.inner if isinstance(model, RoutedTier) else model
        if stream is not None and isinstance(model, StreamingTier):
            try:
                return await model.stream(messages, schema=schema, schema_name=schema_name,
                                          max_tokens=limit, on_text=stream.write)
            finally:
                await stream.end()
        return await model.complete(messages, schema=schema, schema_name=schema_name,
                                    max_tokens=limit)

    async def _discard(self, purpose: str) -> None:
        stream = self.streams.get(purpose)
        if stream is not None:
            await stream.discard()


def _parse_model(text: str, model: type[T]) -> T:
    try:
        data = json.loads(_json_block(text), strict=False)  # raw newlines in strings
    except json.JSONDecodeError as exc:
        raise UnusableOutput(f"not valid JSON: {exc.msg} at char {exc.pos}") from exc
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "top level"
        raise UnusableOutput(f"{where}: {first['msg']}") from exc


def _json_block(text: str) -> str:
    """The JSON object in a reply, tolerating a code fence or prose around it."""
    start, end = text.find("{"), text.rfind("}")
    return text[start:end + 1] if 0 <= start < end else text

