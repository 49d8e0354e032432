"""The claim–evidence double check: unsupported claims are flagged, supported ones are not."""

from __future__ import annotations

import json
import re
from typing import Any

from research_core.claims import sentence_claims
from research_core.store import SqlStore
from research_core.store_models import ClaimRow
from tests.conftest import RecordingBackend
from tests.engine_run import Serve, run_engine
from tests.fakes.openai_server import last_user_text
from tests.scripted import Script, data_block


def _source_number(body: dict[str, Any], needle: str) -> int:
    blocks = re.split(r"\n(?=\[\d+\])", data_block(body))
    hit = next(b for b in blocks if needle in b)
    return int(re.match(r"\[(\d+)\]", hit).group(1))  # type: ignore[union-attr]


def _report(body: dict[str, Any]) -> str:
    n = _source_number(body, "214,000")
    return (f"Heat pump sales reached 214,000 units in September 2026 [{n}].\n\n"
            f"Heat pump sales doubled to 999,000 units in September 2026 [{n}].\n\n"
            f"Heat pump sales were strong in September 2026 [{n}].")


def _verdicts(body: dict[str, Any]) -> str:
    claims = re.findall(r"^#(\d+) (.*)$", data_block(body), re.M)
    return json.dumps({"verdicts": [
        {"index": int(i), "supported": "strong" not in text, "reason": "judged"}
        for i, text in claims]})


async def test_unsupported_claims_are_flagged_and_supported_ones_are_not(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    script = Script(rules={"report": _report, "VerdictsOut": _verdicts})
    out = await run_engine(serve, script, backend, store)
    by_text = {c.text.split(" [")[0]: c for c in out.report.claims}
    good = by_text["Heat pump sales reached 214,000 units in September 2026"]
    invented = by_text["Heat pump sales doubled to 999,000 units in September 2026"]
    vague = by_text["Heat pump sales were strong in September 2026"]
    assert good.supported
    assert not invented.supported and invented.checked_by == "code"
    assert "999000" in invented.reason
    assert not vague.supported and vague.checked_by == "model"
    assert "Flagged claims" in out.report.render()
    assert "999,000" in out.report.render().split("Flagged claims")[1]
    rows = await store.rows(ClaimRow, out.state.run_id)
    assert sorted(r.supported for r in rows) == [False, False, True]


def test_fallback_extraction_takes_cited_or_numeric_sentences() -> None:
    claims = sentence_claims("Sales rose 5% [1]. The market is big. Prices fell [2].")
    assert [(c.text, c.citations) for c in claims.claims] == [
        ("Sales rose 5% [1].", [1]), ("Prices fell [2].", [2])]


async def test_a_claim_citing_nothing_is_flagged(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    def report(body: dict[str, Any]) -> str:
        n = _source_number(body, "214,000")
        return f"Sales reached 214,000 units [{n}].\n\nPrices fell 9.5% [{n}]."

    def claims(body: dict[str, Any]) -> str:
        return json.dumps({"claims": [{"text": "Prices fell 9.5%", "citations": []}]})

    out = await run_engine(serve, Script(rules={"report": report, "ClaimsOut": claims}),
                           backend, store)
    assert [(c.supported, c.reason) for c in out.report.claims] == [(False, "cites no source")]


async def test_claims_the_report_does_not_contain_are_sent_back(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    def invented(body: dict[str, Any]) -> str:
        return json.dumps({"claims": [{"text": "The market will triple by 2030 in Narnia",
                                       "citations": [1]}]})

    out = await run_engine(serve, Script(rules={"ClaimsOut": invented}), backend, store)
    calls = out.server.requests_for("ClaimsOut")
    assert len(calls) == 2 and "not in the report" in last_user_text(calls[1])
    assert not any("Narnia" in c.text for c in out.report.claims)
    assert out.report.claims, "the fallback should have listed the report's own sentences"
