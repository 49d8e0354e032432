"""The claim–evidence double check after the report (seed 000).

A light tier lists the report's claims and judges each against the evidence it cites; code
then checks what code can: a claim without a citation, or one whose figures do not occur in
its cited evidence, is flagged whatever the model said.
"""

from __future__ import annotations

import re
from dataclasses import replace

from research_core.evidence import Evidence
from research_core.gateway import Gateway
from research_core.memory import numbers_in
from research_core.prompts import max_tokens, render
from research_core.reporter import ClaimCheck, Report, cited_numbers
from research_core.schemas import ClaimOut, ClaimsOut, VerdictOut, VerdictsOut
from research_core.terms import overlap

_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
TIER = "executor"
IN_REPORT = 0.8  # share of a claim's terms that must occur in the report


async def double_check(gw: Gateway, report: Report, evidence: list[Evidence]) -> Report:
    """The report with every claim checked; unsupported ones are flagged in its output."""
    if not report.sources:
        return report
    claims = await extract_claims(gw, report)
    quoted = {s.number: [e.text for e in evidence if e.source_id == s.source_id]
              for s in report.sources}
    verdicts = await judge_claims(gw, claims, quoted)
    checks = [_code_check(c, v, quoted) for c, v in zip(claims, verdicts, strict=True)]
    flagged = sum(not c.supported for c in checks)
    gw.log.emit("claims", f"{len(checks)} claims checked, {flagged} flagged as unsupported")
    return replace(report, claims=checks)


async def extract_claims(gw: Gateway, report: Report) -> list[ClaimOut]:
    messages = render("extract_claims", report=report.text)
    numbers = {s.number for s in report.sources}

    def check(out: ClaimsOut) -> str | None:
        unknown = sorted({n for c in out.claims for n in c.citations} - numbers)
        if unknown:
            return f"citations {unknown} are not sources of the report"
        invented = [c.text for c in out.claims if overlap(c.text, report.text) < IN_REPORT]
        if invented:
            return f"this claim is not in the report; copy its sentences: {invented[0][:100]!r}"
        return None if out.claims else "no claims listed"

    out = await gw.structured(TIER, "extract_claims", messages, ClaimsOut,
                              lambda: sentence_claims(report.text), check)
    return out.claims


def sentence_claims(text: str) -> ClaimsOut:
    """Fallback: every sentence that cites a source or states a figure is a claim."""
    claims = []
    for sentence in _SENTENCE.split(text):
        sentence = sentence.strip(" -*")
        if sentence and (cited_numbers(sentence) or numbers_in(sentence)):
            claims.append(ClaimOut(text=sentence[:300], citations=cited_numbers(sentence)[:6]))
    return ClaimsOut(claims=claims[:20])


async def judge_claims(gw: Gateway, claims: list[ClaimOut],
                       quoted: dict[int, list[str]]) -> list[VerdictOut | None]:
    """The model's verdict per claim (None where it gave none usable)."""
    if not claims:
        return []
    blocks = [_claim_block(i, c, quoted) for i, c in enumerate(claims)]
    messages = render("check_claims", claims="\n".join(blocks))

    def check(out: VerdictsOut) -> str | None:
        got = sorted(v.index for v in out.verdicts)
        want = list(range(len(claims)))
        return None if got == want else f"give one verdict for each index {want}, got {got}"

    out = await gw.try_structured(TIER, "check_claims", messages, VerdictsOut, check,
                                  max_tokens=max_tokens("check_claims") * len(claims))
    by_index = {v.index: v for v in out.verdicts} if out else {}
    return [by_index.get(i) for i in range(len(claims))]


def _claim_block(index: int, claim: ClaimOut, quoted: dict[int, list[str]]) -> str:
    lines = [f"#{index} {claim.text}"]
    for n in claim.citations:
        lines += [f"    [{n}] {t}" for t in quoted.get(n, [])[:3]]
    return "\n".join(lines)


def _code_check(claim: ClaimOut, verdict: VerdictOut | None,
                quoted: dict[int, list[str]]) -> ClaimCheck:
    if not claim.citations:
        return ClaimCheck(claim.text, [], False, "cites no source", "code")
    cited_text = " ".join(t for n in claim.citations for t in quoted.get(n, []))
    missing = sorted(numbers_in(claim.text) - numbers_in(cited_text) - set(map(str,
                     claim.citations)))
    if missing:
        return ClaimCheck(claim.text, claim.citations, False,
                          f"figures {missing} are not in the cited evidence", "code")
    if verdict is None:
        return ClaimCheck(claim.text, claim.citations, True,
                          "figures found in the cited evidence", "code")
    return ClaimCheck(claim.text, claim.citations, verdict.supported,
                      verdict.reason or ("supported" if verdict.supported else "unsupported"),
                      "model")
