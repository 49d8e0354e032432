"""Scripted tiers: deterministic answers per JSON schema, served by the fake OpenAI server.

Each test overrides only the decisions it is about; the defaults make a sensible run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.openai_server import Reply, last_user_text, schema_name

Rule = Callable[[dict[str, Any]], "str | Reply"]


def field_of(body: dict[str, Any], label: str) -> str:
    """The value after 'label:' in the request's user message."""
    match = re.search(rf"^{label}:\s*(.*)$", last_user_text(body), re.M)
    return match.group(1).strip() if match else ""


def hit_lines(body: dict[str, Any]) -> list[str]:
    return re.findall(r"^#\d+ .*$", last_user_text(body), re.M)


def data_block(body: dict[str, Any]) -> str:
    text = last_user_text(body)
    return text.split("<<<DATA", 1)[-1].split("DATA>>>", 1)[0].strip()


@dataclass
class Script:
    subquestions: list[tuple[str, float]] = field(default_factory=lambda: [
        ("What were heat pump sales figures?", 0.9),
        ("What were heat pump prices?", 0.8),
    ])
    relevance: Callable[[str], float] = lambda line: 0.9
    rules: dict[str, Rule] = field(default_factory=dict)

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        name = schema_name(body) or "report"
        rule = self.rules.get(name) or getattr(self, f"default_{name}")
        result: str | Reply = rule(body)
        return result

    def default_Decomposition(self, body: dict[str, Any]) -> str:
        subs = [{"question": q, "value": v} for q, v in self.subquestions]
        return json.dumps({"subquestions": subs})

    def default_QueryPlan(self, body: dict[str, Any]) -> str:
        return json.dumps({"queries": [field_of(body, "Question")]})

    def default_HitScores(self, body: dict[str, Any]) -> str:
        scores = [{"index": i, "relevance": self.relevance(line), "reason": "scripted"}
                  for i, line in enumerate(hit_lines(body))]
        return json.dumps({"scores": scores})

    def default_MemorySummaryOut(self, body: dict[str, Any]) -> str:
        """Keeps every note and, on a rewrite, the earlier summary (what a good summariser
        keeps: the summary check refuses one that drops a fact of either)."""
        earlier = last_user_text(body).split("Earlier summary:", 1)[-1].split("<<<DATA")[0]
        lines = [*(ln for ln in earlier.strip().splitlines() if ln.strip() not in ("", "none")),
                 *data_block(body).splitlines()]
        return json.dumps({"conclusion": "summary", "evidence": lines, "open_doubts": []})

    def default_ReflectionOut(self, body: dict[str, Any]) -> str:
        return json.dumps({"answers_goal": True, "off_goal": [], "neglected": "",
                           "drifted": False})

    def default_CoverageOut(self, body: dict[str, Any]) -> str:
        """Every facet answered (the facets are the '#i' lines before the data)."""
        facets = re.findall(r"^#(\d+) ", last_user_text(body).split("<<<DATA")[0], re.M)
        return json.dumps({"answered": [int(i) for i in facets], "unknowns": []})

    def default_UpgradeOut(self, body: dict[str, Any]) -> str:
        """The old fixed rule, as the planner's reply: thin or open coverage asks for deep."""
        listing = data_block(body)
        thin = listing.count("[insufficient]") or listing.count("[open]") >= 2
        return json.dumps({"upgrade": bool(thin),
                           "reason": "thin coverage" if thin else "none", "detail": ""})

    def default_report(self, body: dict[str, Any]) -> str:
        numbers = re.findall(r"^\[(\d+)\]", data_block(body), re.M)
        return "\n\n".join(f"Finding {_letter(int(n))} from the sources [{n}]."
                             for n in numbers)

    def default_VerdictsOut(self, body: dict[str, Any]) -> str:
        indices = re.findall(r"^#(\d+) ", data_block(body), re.M)
        return json.dumps({"verdicts": [{"index": int(i), "supported": True, "reason": "ok"}
                                        for i in indices]})

    def default_FollowUpOut(self, body: dict[str, Any]) -> str:
        numbered = re.findall(r"^\[(\d+)\]", data_block(body), re.M)
        if not numbered:
            return json.dumps({"answer": "Nothing found yet.", "sufficient": False})
        return json.dumps({"answer": f"The findings answer it [{numbered[0]}].",
                           "sufficient": True})


def _letter(n: int) -> str:
    """A, B, … Z, AA, …: distinct words that are not figures."""
    return (_letter((n - 1) // 26) if n > 26 else "") + chr(65 + (n - 1) % 26)
