"""The measured profile of each embedded model (issue 43): the call kinds where runs passed
more groups with the model than with the code path, with the figures that say so, as data
in profile.yaml (`redsearch models check` measures them)."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

from research_core.settings.values import CALL_KINDS


@cache
def profiles() -> dict[str, Any]:
    text = resources.files("research_core.models").joinpath("profile.yaml").read_text("utf-8")
    loaded: dict[str, Any] = yaml.safe_load(text) or {}
    return loaded


def measured_calls(model: str) -> frozenset[str]:
    """The call kinds `model` measured better at; none for a model never measured."""
    calls = frozenset(profiles().get(model, {}).get("calls", []))
    unknown = calls - set(CALL_KINDS)
    if unknown:  # profile.yaml is the project's own data: a wrong kind is a bug
        raise ValueError(f"profile.yaml names unknown call kinds {sorted(unknown)}")
    return calls
