"""The JSON shapes the tiers must return, validated beyond what a grammar can enforce.

A value that fails validation goes back to the model once with the error, then to a fallback.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from pydantic import BaseModel, Field, field_validator

_PLACEHOLDER = re.compile(r"^\s*(sub.?q\w*|question|query|string|text|example)\s*\d*\s*$", re.I)


def _real_text(value: str, what: str) -> str:
    value = value.strip()
    if _PLACEHOLDER.match(value) or len(value) < 3:
        raise ValueError(f"{what} {value!r} is a placeholder, not real text")
    return value


class SubQuestion(BaseModel):
    question: str = Field(max_length=300)
    value: float = Field(ge=0.0, le=1.0)

    @field_validator("question")
    @classmethod
    def _question(cls, v: str) -> str:
        v = _real_text(v, "sub-question")
        if len(v) < 8:
            raise ValueError(f"sub-question {v!r} is too short to research")
        return v


class Decomposition(BaseModel):
    subquestions: list[SubQuestion] = Field(min_length=1, max_length=8)


class QueryPlan(BaseModel):
    queries: list[str] = Field(min_length=1, max_length=6)
    since: str = ""
    until: str = ""

    @field_validator("queries")
    @classmethod
    def _queries(cls, v: list[str]) -> list[str]:
        cleaned = [_real_text(q, "query") for q in v if q.strip()]
        if not cleaned:
            raise ValueError("no usable query")
        return [q[:200] for q in cleaned]

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
    reason: str = Field(default="", max_length=400)


class HitScores(BaseModel):
    scores: list[HitScore]


class MemorySummaryOut(BaseModel):
    conclusion: str
    evidence: list[str]
    open_doubts: list[str] = Field(default_factory=list)


class ReflectionOut(BaseModel):
    answers_goal: bool
    off_goal: list[str] = Field(default_factory=list)
    neglected: str = ""
    drifted: bool = False


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()
