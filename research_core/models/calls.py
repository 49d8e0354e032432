"""The call kinds a run makes of its models, and `RED_EMBEDDED_CALLS`: which of them the
embedded default model takes (issue 43). "measured" (the default) is the model's measured
profile (`research_core/models/profile.yaml`: the kinds where runs passed more groups with
the model than with the code path); "all", "none", or a comma-separated list of kinds."""

from __future__ import annotations

from research_core.errors import SettingsError

CALL_KINDS = ("decompose", "plan_query", "score_hits", "summarise", "reflect", "report",
              "followup", "judge_coverage", "check_coverage", "upgrade", "steer",
              "check_claims", "monolithic", "mono_answer")
MEASURED = "measured"


def parse_calls(raw: str) -> frozenset[str] | None:
    """The call kinds a `RED_EMBEDDED_CALLS` value names; None for the measured profile."""
    value = raw.strip().lower() or MEASURED
    if value == MEASURED:
        return None
    if value == "all":
        return frozenset(CALL_KINDS)
    if value == "none":
        return frozenset()
    named = {k.strip() for k in value.split(",") if k.strip()}
    unknown = sorted(named - set(CALL_KINDS))
    if unknown:
        raise SettingsError(f"RED_EMBEDDED_CALLS names unknown call kinds {', '.join(unknown)}; "
                            f"use {MEASURED}, all, none or some of {', '.join(CALL_KINDS)}")
    return frozenset(named)
