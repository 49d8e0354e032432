"""The tier that is no model (`RED_<TIER>_MODEL=none`): every call of it takes the code path
at once, without a retry and without a ledger entry. The gateway asks it nothing; it exists
so that a tier can be switched off as a setting, e.g. to measure what a model adds over the
code path (`redsearch eval`)."""

from __future__ import annotations

from typing import Any

from research_core.protocols import Completion, Message
from research_core.settings import NO_MODEL


class NoModelTier:
    """A tier with no model behind it."""

    @property
    def model(self) -> str:
        return NO_MODEL

    async def complete(self, messages: list[Message], *, schema: dict[str, Any] | None,
                       schema_name: str, max_tokens: int) -> Completion:
        """Never called by the gateway; answers nothing if called anyway."""
        return Completion("", 0, 0, NO_MODEL)
