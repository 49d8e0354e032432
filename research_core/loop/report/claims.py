"""The claim–evidence double check after the report (docs/design.md §1).

The claims are the report's own sentences, found in code: every sentence that cites a source
or states a figure (headings and the run's own questions are not claims). Code checks each:
a sentence stating a figure or date must cite at least one source whose kept evidence states
that figure (compared normalised, `research_core.text.figures`: 1,860 = 1.86千, 0.5% = 0.50%);
a sentence stating figures that cites nothing is flagged. A light tier then judges the cited
sentences code let pass against their evidence: its verdict can add a flag, never remove one.
A sentence that is word for word a figure sentence of a source it cites (an extractive
report's, or a model's quote) needs no verdict: it is its evidence.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from research_core.loop.memory.evidence import Evidence
from research_core.loop.report.citing import CITATION
from research_core.loop.report.report_evidence import facts_of
from research_core.loop.report.reporter import ClaimCheck, Report, cited_numbers
from research_core.models.gateway import Gateway
from research_core.models.prompts import max_tokens, render
from research_core.models.schemas import VerdictOut, VerdictsOut
from research_core.text.figures import Figure, date_keys, figure_keys, figures_in
from research_core.text.sentences import sentences

TIER = "executor"
JUDGED_PER_CALL = 20  # the most verdicts one check_claims answer may hold
CLAIM_CHARS = 300
Keys = dict[int, set[tuple[str, bool]]]


@dataclass(frozen=True)
class Claim:
    """One sentence of the report: its text, the sources it cites, the figures it states."""

    text: str
    citations: list[int]
    figures: list[Figure]


async def double_check(gw: Gateway, report: Report, evidence: list[Evidence],
                       questions: Iterable[str] = ()) -> Report:
    """The report with every claim checked; unsupported ones are flagged in its output."""
    if not report.sources:
        return report
    claims = report_claims(report.text, questions)
    keys = evidence_keys(report, evidence)
    checks = [code_check(c, keys) for c in claims]
    quotes = quoted(report, evidence)
    judged = [i for i, c in enumerate(checks)
              if c.supported and c.citations and not is_quote(claims[i], quotes)]
    verdicts = await judge_claims(gw, [claims[i] for i in judged], quotes)
    for i, verdict in zip(judged, verdicts, strict=True):
        checks[i] = with_verdict(checks[i], verdict)
    by_code = sum(not c.supported and c.checked_by == "code" for c in checks)
    by_model = sum(not c.supported and c.checked_by == "model" for c in checks)
    gw.log.emit("claims", f"{len(checks)} claims (the report's sentences) checked: "
                f"{by_code} flagged by code, {by_model} by the model")
    return replace(report, claims=checks)


def report_claims(text: str, questions: Iterable[str] = ()) -> list[Claim]:
    """Every sentence of the report that cites a source or states a figure."""
    asked = [q.strip(" ?？。.").casefold() for q in questions if q.strip()]
    claims = []
    for sentence in sentences(text, headings=False, clauses=False):
        bare = _without(CITATION.sub("", sentence).casefold(), asked)
        claim = Claim(sentence[:CLAIM_CHARS], cited_numbers(sentence), figures_in(bare))
        if claim.figures or (claim.citations and not _is_question(sentence)):
            claims.append(claim)
    return claims


def _without(sentence: str, asked: list[str]) -> str:
    """The sentence without any of the run's questions it repeats (a title is no claim)."""
    for question in asked:
        sentence = sentence.replace(question, " ")
    return sentence


def _is_question(sentence: str) -> bool:
    return CITATION.sub("", sentence).strip().endswith(("?", "？"))


def evidence_keys(report: Report, evidence: list[Evidence]) -> Keys:
    """Per source number: the figures its kept evidence states, and its publish date."""
    keys: Keys = {}
    for source in report.sources:
        found = date_keys(source.published)
        for item in evidence:
            if item.source_id == source.source_id:
                found |= figure_keys(item.text)
        keys[source.number] = found
    return keys


def quoted(report: Report, evidence: list[Evidence]) -> dict[int, list[str]]:
    """Per source number, what the light tier is shown of its evidence: the sentences that
    state figures (`report_evidence.facts_of`), as the reporter was shown them."""
    return {s.number: list(dict.fromkeys(f for e in evidence if e.source_id == s.source_id
                                         for f in facts_of(e.text)))
            for s in report.sources}


def is_quote(claim: Claim, quotes: dict[int, list[str]]) -> bool:
    """The claim is, word for word, a whole figure sentence of a source it cites: it says
    what that evidence says, so code has checked it and no model is asked."""
    said = _words(CITATION.sub("", claim.text))
    return bool(said) and any(said == _words(q) for n in claim.citations
                              for q in quotes.get(n, []))


def _words(text: str) -> str:
    return " ".join(text.casefold().replace(".", " ").split())


def code_check(claim: Claim, keys: Keys) -> ClaimCheck:
    """What code can tell: a figure must be stated by a source the sentence cites."""
    if claim.figures and not claim.citations:
        return ClaimCheck(claim.text, [], False, "states figures but cites no source", "code")
    stated = set().union(*(keys.get(n, set()) for n in claim.citations))
    missing = [f.text for f in claim.figures if f.key not in stated]
    if missing:
        return ClaimCheck(claim.text, claim.citations, False, f"figures {missing} are in none "
                          f"of the cited sources {claim.citations}", "code")
    why = "figures found in the cited evidence" if claim.figures else "no figure to check"
    return ClaimCheck(claim.text, claim.citations, True, why, "code")


def with_verdict(check: ClaimCheck, verdict: VerdictOut | None) -> ClaimCheck:
    """The model may flag what code let pass; it never clears a flag."""
    if verdict is None or verdict.supported:
        return check
    return replace(check, supported=False, checked_by="model",
                   reason=verdict.reason or "the model found it unsupported")


async def judge_claims(gw: Gateway, claims: list[Claim],
                       quotes: dict[int, list[str]]) -> list[VerdictOut | None]:
    """The model's verdict per claim (None where it gave none usable), in batches."""
    verdicts: list[VerdictOut | None] = []
    for start in range(0, len(claims), JUDGED_PER_CALL):
        verdicts += await _judge_batch(gw, claims[start:start + JUDGED_PER_CALL], quotes)
    return verdicts


async def _judge_batch(gw: Gateway, claims: list[Claim],
                       quotes: dict[int, list[str]]) -> list[VerdictOut | None]:
    blocks = [_claim_block(i, c, quotes) for i, c in enumerate(claims)]
    messages = render("check_claims", claims="\n".join(blocks))

    def check(out: VerdictsOut) -> str | None:
        got = sorted(v.index for v in out.verdicts)
        want = list(range(len(claims)))
        return None if got == want else f"give one verdict for each index {want}, got {got}"

    out = await gw.try_structured(TIER, "check_claims", messages, VerdictsOut, check,
                                  max_tokens=max_tokens("check_claims") * len(claims))
    by_index = {v.index: v for v in out.verdicts} if out else {}
    return [by_index.get(i) for i in range(len(claims))]


def _claim_block(index: int, claim: Claim, quotes: dict[int, list[str]]) -> str:
    lines = [f"#{index} {claim.text}"]
    for n in claim.citations:
        lines += [f"    [{n}] {t}" for t in quotes.get(n, [])[:3]]
    return "\n".join(lines)
