"""Loads the prompts (data, in prompts.yaml) and renders them into chat messages."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from string import Template
from typing import Any

import yaml

from research_core.protocols import Message


@cache
def _prompts() -> dict[str, Any]:
    text = resources.files("research_core.models").joinpath("prompts.yaml").read_text("utf-8")
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


# Runs of three or more angle brackets (ASCII, full-width, small and guillemets), spaces
# allowed between them: what could pass for a <<<DATA / DATA>>> delimiter inside quoted text.
_DELIMITER_LIKE = re.compile(r"(?:[<＜﹤‹«〈《]\s*){3,}|(?:[>＞﹥›»〉》]\s*){3,}")


def neutralise(text: str) -> str:
    """Quoted text with its delimiter look-alikes defused, so that a page cannot close the
    data block it is quoted in and speak outside it."""
    return _DELIMITER_LIKE.sub(lambda m: "‹" if m.group(0)[0] in "<＜﹤‹«〈《" else "›", text)


def render(key: str, deep: bool = False, **variables: object) -> list[Message]:
    """The system and user messages of one prompt, with its variables filled in. Every value
    is neutralised: only the template itself draws the data delimiters. `deep` (an applied
    deep mode) picks the prompt's `deep_system` and `deep_user` variants where it has them."""
    spec = _prompts()[key]
    values = {"data_rule": _prompts()["data_rule"],
              **{k: neutralise(str(v)) for k, v in variables.items()}}
    system = spec.get("deep_system", spec["system"]) if deep else spec["system"]
    user = spec.get("deep_user", spec["user"]) if deep else spec["user"]
    return [
        Message("system", Template(system).substitute(values)),
        Message("user", Template(user).substitute(values)),
    ]


def retry_message(error: str) -> Message:
    return Message("user", Template(_prompts()["retry"]).substitute(error=error))


def text(key: str, part: str) -> str:
    """One named text of a prompt (e.g. the monolithic agent's `decide` instruction)."""
    return str(_prompts()[key][part])


def schema_names() -> dict[str, str]:
    """The prompts that ask for JSON, with the name of the shape each asks for."""
    return {key: str(spec["schema"]) for key, spec in _prompts().items()
            if isinstance(spec, dict) and "schema" in spec}


def max_tokens(key: str) -> int:
    """The answer-length cap of one prompt (0: the caller decides)."""
    return int(_prompts()[key].get("max_tokens", 0))
