"""The claim–evidence double check: unsupported claims are flagged, supported ones are not."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

from research_core.loop.memory.evidence import Evidence
from research_core.loop.report.claims import (
    Claim,
    code_check,
    evidence_keys,
    is_quote,
    report_claims,
)
from research_core.loop.report.reporter import Report, Source
from research_core.store.models import ClaimRow
from research_core.store.sql import SqlStore
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
    assert "999,000" in invented.reason
    assert not vague.supported and vague.checked_by == "model"
    assert "Flagged claims" in out.report.render()
    assert "999,000" in out.report.render().split("Flagged claims")[1]
    rows = await store.rows(ClaimRow, out.state.run_id)
    assert sorted(r.supported for r in rows) == [False, False, True]


async def test_an_invented_figure_is_flagged_though_the_model_calls_it_supported(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    def report(body: dict[str, Any]) -> str:
        n = _source_number(body, "7,150")
        return (f"Heat pump equipment prices fell 9.5% to 7,150 euros [{n}].\n\n"
                f"Installed systems cost 99,999 euros [{n}].")

    out = await run_engine(serve, Script(rules={"report": report}), backend, store)
    flagged = {c.text: c for c in out.report.flagged}
    invented = next(c for t, c in flagged.items() if "99,999" in t)
    assert invented.checked_by == "code" and "99,999" in invented.reason
    assert not any("7,150" in t for t in flagged)
    judged = out.server.requests_for("VerdictsOut")
    assert judged and "99,999" not in data_block(judged[0]), "a code flag is not re-judged"


async def test_an_uncited_figure_gets_the_source_that_states_it_without_a_retry(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    """Issue 43, item 4: the sentence is mended in code (`citing.mend`), not sent back: it
    gets the number of the source whose evidence states 9.5%, and the claim check agrees."""
    def report(body: dict[str, Any]) -> str:
        first = {**body, "messages": body["messages"][:2]}
        n = _source_number(first, "214,000")
        return f"Sales reached 214,000 units [{n}]. Prices fell 9.5% in October."

    out = await run_engine(serve, Script(rules={"report": report}), backend, store)
    assert not [r for r in out.server.requests_for("") if "not usable" in last_user_text(r)]
    assert not out.report.fallback and out.report.flagged == []
    n = _source_number({"messages": out.server.requests_for("")[-1]["messages"][:2]}, "9.5%")
    assert out.report.text.endswith(f"Prices fell 9.5% in October [{n}].")
    assert all(c.supported for c in out.report.claims if "9.5%" in c.text)


def test_a_figure_without_a_citation_is_flagged_by_code() -> None:
    [claim] = report_claims("Prices fell 9.5% in October.")
    check = code_check(claim, {1: {("9.5", True)}})
    assert (check.supported, check.reason, check.checked_by) == (
        False, "states figures but cites no source", "code")


def test_claims_are_the_reports_sentences_in_english_and_chinese() -> None:
    text = ("# Heat pumps in 2026\n"
            "How did heat pump sales move in 2026?\n"
            "Sales rose 5% [1]. The market is big. Prices fell [2].\n"
            "- Exports reached 1.86千 units. [3]\n"
            "碳酸锂均价8.62万元/吨。[1]氢氧化锂下跌4.9%[2]。价差扩大。")
    claims = report_claims(text, ["How did heat pump sales move in 2026?"])
    assert [(c.text, c.citations, [f.value for f in c.figures]) for c in claims] == [
        ("Sales rose 5% [1].", [1], ["5"]),
        ("Prices fell [2].", [2], []),
        ("Exports reached 1.86千 units. [3]", [3], ["1860"]),
        ("碳酸锂均价8.62万元/吨。 [1]", [1], ["86200"]),
        ("氢氧化锂下跌4.9%[2]。", [2], ["4.9"]),
    ]


def _source(number: int, source_id: str) -> Source:
    return Source(number, source_id, "t", "https://x.example", "p", dt.date(2026, 10, 1),
                  "news")


def _evidence(source_id: str, text: str) -> Evidence:
    return Evidence("E1", "N1", "Q1", source_id, "t", "u", None, "news", "p", text,
                    0.9, 0.6, 1.0, 0.8, "", True)


def test_figures_match_however_they_are_written() -> None:
    report = Report("", [_source(1, "a"), _source(2, "b")], [1, 2], False)
    keys = evidence_keys(report, [_evidence("a", "The fee was 18,600 yuan, up 0.50%."),
                                  _evidence("b", "碳酸锂均价8.62万元/吨, 亿元 24亿")])
    supported = ["The fee was 1.86万 yuan, up 0.5% [1].", "The fee was 18600 [1].",
                 "Lithium carbonate averaged 86,200 yuan [2] in October 2026.",
                 "Revenue was 2.4 billion [2].", "Lithium was 8.62 [2]."]
    for text in supported:
        claim = report_claims(text)[0]
        assert code_check(claim, keys).supported, text
    for text in ["The fee was 18,600 yuan [2].", "Up 0.5 [1].", "Sales were 99,999 [1][2]."]:
        check = code_check(report_claims(text)[0], keys)
        assert not check.supported and check.checked_by == "code", text


def test_a_claim_that_quotes_its_cited_evidence_word_for_word_needs_no_verdict() -> None:
    quotes = {1: ["Sales reached 214,000 units in September 2026."], 2: ["Prices fell."]}
    quoted = Claim("Sales reached 214,000 units in September 2026 [1].", [1], [])
    assert is_quote(quoted, quotes)
    assert not is_quote(Claim("Sales reached 214,000 units in September 2026 [2].", [2], []),
                        quotes)  # another source's sentence: the model judges it
    assert not is_quote(Claim("Sales reached 214,000 units [1].", [1], []), quotes)
