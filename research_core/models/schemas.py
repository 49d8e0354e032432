"""The JSON shapes the tiers must return, validated beyond what a grammar can enforce.

A value that fails validation goes back to the model once with the error, then to a fallback.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator

from research_core.models.prompts import schema_names
from research_core.text.terms import terms

# Every string and list is bounded: a grammar-constrained local model then always finishes
# its JSON within the answer cap instead of being cut off mid-string.
Short = Annotated[str, Field(max_length=120)]
Line = Annotated[str, Field(max_length=300)]
EvidenceId = Annotated[str, Field(max_length=8)]

_PLACEHOLDER = re.compile(r"^\s*(sub.?q\w*|question|query|string|text|example)\s*\d*\s*$", re.I)


def _real_text(value: str, what: str) -> str:
    value = value.strip()
    if _PLACEHOLDER.match(value) or len(value) < 3:
        raise ValueError(f"{what} {value!r} is a placeholder, not real text")
    return value


SUBQUESTION_MIN_CHARS = 8  # shorter is too short to research


class SubQuestion(BaseModel):
    question: str = Field(max_length=160)
    value: float = Field(ge=0.0, le=1.0)

    @field_validator("question")
    @classmethod
    def _question(cls, v: str) -> str:
        v = _real_text(v, "sub-question")
        if len(v) < SUBQUESTION_MIN_CHARS:
            raise ValueError(f"sub-question {v!r} is too short to research")
        return v


class Decomposition(BaseModel):
    subquestions: list[SubQuestion] = Field(min_length=1, max_length=4)


class QueryPlan(BaseModel):
    queries: list[Short] = Field(min_length=1, max_length=3)
    since: str = Field(default="", max_length=10)
    until: str = Field(default="", max_length=10)

    @field_validator("queries")
    @classmethod
    def _queries(cls, v: list[str]) -> list[str]:
        cleaned = [_real_text(q, "query") for q in v if q.strip()]
        empty = [q for q in cleaned if not terms(q)]
        if empty:
            raise ValueError(f"query {empty[0]!r} has no searchable word")
        if not cleaned:
            raise ValueError("no usable query")
        return cleaned

    @field_validator("since", "until")
    @classmethod
    def _date(cls, v: str) -> str:
        v = v.strip()
        if v:
            dt.date.fromisoformat(v)
        return v


class HitScore(BaseModel):
    index: int = Field(ge=0)
    relevance: float = Field(ge=0.0, le=1.0)
    reason: Short = ""


class HitScores(BaseModel):
    scores: list[HitScore] = Field(max_length=24)


class MemorySummaryOut(BaseModel):
    conclusion: Line
    evidence: list[Line] = Field(max_length=40)
    open_doubts: list[Short] = Field(default_factory=list, max_length=5)


class CoverageOut(BaseModel):
    """Which facets (by index) the evidence answers, and what stays unknown."""

    answered: list[int] = Field(default_factory=list, max_length=8)
    unknowns: list[Short] = Field(default_factory=list, max_length=4)


UpgradeReason = Literal["thin coverage", "unresolved conflict", "unknowns that matter", "none"]


class UpgradeOut(BaseModel):
    """The planner's view at the usage reminder: is deeper research worth asking for?"""

    upgrade: bool
    reason: UpgradeReason
    detail: Short = ""


class ReflectionOut(BaseModel):
    answers_goal: bool
    off_goal: list[EvidenceId] = Field(default_factory=list, max_length=10)
    neglected: str = Field(default="", max_length=160)
    drifted: bool = False


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


class VerdictOut(BaseModel):
    index: int = Field(ge=0)
    supported: bool
    reason: Short = ""


class VerdictsOut(BaseModel):
    verdicts: list[VerdictOut] = Field(max_length=20)


class FollowUpOut(BaseModel):
    """A follow-up answered from the run's findings; `sufficient` false asks for research.

    1,000 characters: llama.cpp's grammar compiler refuses a string bound much above that
    (1,200 already fails), and the answer cap of the prompt is about as long."""

    answer: str = Field(max_length=1000)
    sufficient: bool


class SteerOut(BaseModel):
    """The planner's reading of a person's steer: open sub-questions to drop, to work on
    first, and at most two new ones to add."""

    drop: list[Annotated[str, Field(max_length=8)]] = Field(default_factory=list, max_length=8)
    first: list[Annotated[str, Field(max_length=8)]] = Field(default_factory=list,
                                                             max_length=8)
    add: list[SubQuestion] = Field(default_factory=list, max_length=2)


class NextAction(BaseModel):
    """The naive baseline's decision for one turn. `query` is required and non-empty so that
    a grammar-constrained small model writes one; it is ignored when the action is "answer"."""

    action: Literal["search", "answer"]
    query: str = Field(min_length=3, max_length=120)
    reason: str = Field(default="", max_length=160)


def prompt_schemas() -> dict[str, type[BaseModel]]:
    """Every JSON shape the engine can ask a model for, by the prompt that asks for it."""
    return {prompt: _MODELS[name] for prompt, name in schema_names().items()}


def is_prompt_schema(model: type[BaseModel]) -> bool:
    return model in prompt_schemas().values()


_MODELS: dict[str, type[BaseModel]] = {m.__name__: m for m in (
    Decomposition, QueryPlan, HitScores, MemorySummaryOut, ReflectionOut, VerdictsOut,
    FollowUpOut, NextAction, CoverageOut, UpgradeOut, SteerOut)}
