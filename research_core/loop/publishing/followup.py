"""Follow-up questions in a finished (or stopped) run's thread (docs/design.md §1).

A follow-up is answered from what the run already knows: its sub-question findings and the
evidence closest to the follow-up. One that asks for a period's high or low ("which month had
the highest sales?", "哪个月销量最低？") is answered from the dated series the thread holds, those
its own charts draw first (`extremes`): the answer must name that period and its figure, cited.
Only when that is not enough, and the run's resource owner still grants steps, is the
follow-up researched as a new sub-question of the goal tree, and then answered again. The
answer is one more answer part, published through the outbox.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from research_core.budget.owner import BudgetOwner
from research_core.delivery.publications import Delivery, Publication
from research_core.loop.answering import builder
from research_core.loop.answering.completion import Reader, page_lines
from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.goal_tree import Node
from research_core.loop.memory.state import RunState
from research_core.loop.publishing.extremes import Extreme, described, extreme_of
from research_core.loop.publishing.series import Series, charted, every_series
from research_core.loop.report.reporter import (
    SOURCES_HEADING,
    Source,
    citation_problem,
    cited_numbers,
    echo_problem,
    number_sources,
)
from research_core.models.gateway import Gateway
from research_core.models.prompts import render
from research_core.models.schemas import FollowUpOut
from research_core.protocols import Similarity
from research_core.text.asking import Asked, read_question
from research_core.text.figures import figures_in, states_figure
from research_core.text.terms import CJK, has_cjk
from research_core.wording import ENGLISH_WORDS, Words
from research_core.wording import for_question as asked_words

SOURCES_SHOWN = 8
FINDINGS_SHOWN = 6
RELEVANT_SIMILARITY = 0.45
CLOSEST_ANYWAY = 3  # shown even below the threshold: the model judges whether they answer
MIN_WORDS = 3
FALLBACK_CHARS = 1000  # FollowUpOut.answer's bound
URL = re.compile(r"https?://\S+")
WORD = re.compile(r"\w+")
LETTERED = re.compile(r"[^\W\d_]")


class Researcher(Protocol):
    """What a follow-up needs of a run's research loop (the engine's `_Research`)."""

    state: RunState
    gateway: Gateway
    owner: BudgetOwner
    delivery: Delivery

    @property
    def similarity(self) -> Similarity: ...

    @property
    def read(self) -> Reader | None:
        """The run's page reader where reading costs nothing (None: the web)."""

    def may_step(self) -> bool: ...

    async def step(self, node: Node) -> None: ...

    async def close_working_memory(self) -> None: ...


@dataclass(frozen=True)
class FollowUpAnswer:
    text: str
    source_ids: list[str]
    sufficient: bool
    researched_steps: int
    publication: Publication | None


async def answer(r: Researcher, question: str, key: str, max_steps: int) -> FollowUpAnswer:
    """Answer from memory; research further only where that is not enough."""
    asked = read_question(question)
    out, sources = await _from_memory(r, asked)
    steps = 0
    if not out.sufficient and max_steps > 0:
        steps = await _research(r, question, key, max_steps)
        if steps:
            out, sources = await _from_memory(r, asked)
    numbers = set(cited_numbers(out.answer))
    used = [s for s in sources if s.number in numbers]
    cited = [s.source_id for s in used]
    w = asked_words(question)
    heading = w("*Follow-up:* {question}", question=" ".join(question.split()))
    text = f"{heading}\n\n{out.answer.strip()}"
    if used:  # the numbers the answer cites, listed as a report lists them
        text += SOURCES_HEADING + "\n".join(s.line() for s in used)
    publication = await r.delivery.part(key, text, cited or [s.source_id for s in sources[:3]])
    how = f"after {steps} more research steps" if steps else "from memory"
    r.state.log.emit("follow-up", f"{key}: answered {how}", key=key)
    return FollowUpAnswer(out.answer, cited, out.sufficient, steps, publication)


async def _from_memory(r: Researcher, asked: Asked) -> tuple[FollowUpOut, list[Source]]:
    evidence = await _closest(r, asked.text)
    top = await _extreme(r, asked) if asked.extreme else None
    sources, carried = _numbered(r.state, evidence, top)
    said = _extreme_said(top, sources, asked.chinese)
    findings = [f"- {s.question}: {s.conclusion}"
                for s in list(r.state.summaries.values())[-FINDINGS_SHOWN:]]
    if said and top is not None:
        findings.insert(0, f"- {top.series.title}: {said.removeprefix('• ')}")
    messages = render(
        "followup", question=r.state.question, followup=asked.text,
        findings="\n".join(findings) or "- none",
        sources="\n".join(_block(s, carried) for s in sources) or "(no sources)")

    def check(out: FollowUpOut) -> str | None:
        problem = echo_problem(out.answer) or prose_problem(out.answer, sources) or \
            _extreme_problem(out.answer, top, said)
        if problem or not out.sufficient:
            return problem
        return citation_problem(out.answer, len(sources))

    out = await r.gateway.try_structured("executor", "followup", messages, FollowUpOut, check)
    return out or await _assembled(r, asked, carried, sources, said), sources


async def _extreme(r: Researcher, asked: Asked) -> Extreme | None:
    """The extreme asked for, of the thread's series closest to the question."""
    found = await _thread_series(r, asked)
    if not found:
        return None
    [closeness] = await r.similarity.matrix([asked.text], [described(s) for s in found])
    return extreme_of(asked, found, closeness)


async def _thread_series(r: Researcher, asked: Asked) -> list[Series]:
    """The dated series a follow-up reads: those the run's parts show as charts, then those
    of all the thread's kept evidence and of their pages where reading is free, read about
    the run's question and the follow-up ("which month was highest?" counts heat pumps)."""
    kept = r.state.kept()
    pages = await page_lines(kept, r.read)
    about = f"{r.state.question}\n{asked.text}"
    return [*charted(r.state), *every_series(kept, about, pages, joined=True)]


def _numbered(state: RunState, evidence: list[Evidence],
              top: Extreme | None) -> tuple[list[Source], list[Evidence]]:
    """The sources shown, numbered, and the evidence they carry; the source of the extreme
    asked for among them, last where the closest evidence left it out (it must be cited)."""
    sources, carried = number_sources(evidence, SOURCES_SHOWN)
    if top is None or any(s.source_id == top.source_id for s in sources):
        return sources, carried
    own = max((e for e in state.kept() if e.source_id == top.source_id),
              key=lambda e: e.score, default=None)
    if own is None:
        return sources, carried
    added = Source(len(sources) + 1, own.source_id, own.title, own.url, own.publisher,
                   own.published, own.source_type)
    return [*sources, added], [*carried, own]


def _extreme_said(top: Extreme | None, sources: list[Source], zh: bool) -> str:
    """The bullet that names the period asked for and its figure, cited; "" when there is none
    or its source is not among those shown."""
    number = next((s.number for s in sources if top and s.source_id == top.source_id), None)
    return top.line(zh, f"[{number}]") if top is not None and number is not None else ""


def _extreme_problem(answer: str, top: Extreme | None, said: str) -> str | None:
    """Why an answer to "which month was highest?" is not one: it must give the period's
    figure that the thread's series shows (a model once said there was no monthly series
    under the thread's own monthly chart)."""
    if top is None or not said:
        return None
    stated = figures_in(top.point.written)
    if stated and states_figure(answer, stated[0]):
        return None
    return (f"the sources give this as a series; the answer must name the period and its "
            f"figure, cited: {said.removeprefix('• ')}")


def prose_problem(text: str, sources: list[Source]) -> str | None:
    """Why an answer is not one a reader can use, or None: it must say something in words,
    and a link it gives must be one of the numbered sources' (a small model writes a bare,
    invented URL)."""
    known = {s.url for s in sources if s.url}
    if any(link.rstrip(".,;)") not in known for link in URL.findall(text)):
        return "the answer gives a link that is not one of the numbered sources; cite [n]"
    if _words(URL.sub(" ", text)) < MIN_WORDS:
        return f"the answer is not a sentence; answer in words (at least {MIN_WORDS})"
    return None


def _words(text: str) -> int:
    """Its words, none where no word has a letter ("2026-10-10"); Chinese, unspaced, a word
    per two characters."""
    spaced = CJK.sub(" ", text)
    if not LETTERED.search(spaced) and not has_cjk(text):
        return 0
    return len(WORD.findall(spaced)) + len(CJK.findall(text)) // 2


async def _closest(r: Researcher, question: str) -> list[Evidence]:
    """Kept evidence relevant to the follow-up, best first (at most a prompt's worth)."""
    kept = r.state.kept()
    if not kept:
        return []
    scores = (await r.similarity.matrix([question], [e.text for e in kept]))[0]
    ranked = sorted(zip(scores, kept, strict=True), key=lambda p: -p[0])
    relevant = [e for score, e in ranked if score >= RELEVANT_SIMILARITY]
    return (relevant or [e for _, e in ranked[:CLOSEST_ANYWAY]])[:SOURCES_SHOWN * 2]


def _block(source: Source, carried: list[Evidence]) -> str:
    facts = [e.text for e in carried if e.source_id == source.source_id][:2]
    return "\n".join([f"[{source.number}] {source.title} ({source.publisher}, "
                      f"{source.published or 'undated'})", *(f"    {f}" for f in facts)])


async def _assembled(r: Researcher, asked: Asked, carried: list[Evidence],
                     sources: list[Source], top: str = "") -> FollowUpOut:
    """Fallback: the extractive answer from the closest evidence and their pages where reading
    is free (whole sentences, each cited, each once, the disagreements among them), keeping to
    what the run is about, led by the period a question for a high or low asks for (`top`);
    none means research is needed."""
    numbers = {s.source_id: s.number for s in sources}

    def mark(source_id: str) -> str | None:
        return f"[{numbers[source_id]}]" if source_id in numbers else None

    lines = await builder.follow_up(r.similarity, asked, carried,
                                    lambda e: mark(e.source_id), read=r.read)
    lines = [top, *lines] if top else lines  # "which month was highest?": the series says
    while lines and len(_fallback_text(lines)) > FALLBACK_CHARS:  # the longer, English heading
        lines.pop()  # the best come first; the answer keeps to the schema's length
    w = asked_words(asked.text)
    if not lines:
        return FollowUpOut(answer=w("Nothing found so far answers this."), sufficient=False)
    return FollowUpOut(answer=_fallback_text(lines, w), sufficient=True)


def _fallback_text(lines: list[str], w: Words = ENGLISH_WORDS) -> str:
    return w("From the evidence gathered so far:") + "\n" + "\n".join(lines)


async def _research(r: Researcher, question: str, key: str, max_steps: int) -> int:
    """The follow-up as a sub-question of the root, researched for at most `max_steps`."""
    node = _followup_node(r.state, question, key)
    steps = 0
    while steps < max_steps and (target := _next_open(r.state, node.id)) is not None:
        if not r.may_step():
            break
        await r.step(target)
        steps += 1
    await r.close_working_memory()
    return steps


def _followup_node(state: RunState, question: str, key: str) -> Node:
    """The node researching this follow-up; a resumed job finds the one it created."""
    nodes = state.extra.followup_nodes
    if key not in nodes:
        nodes[key] = state.tree.add_child(state.tree.root_id, question, 1.0).id
    return state.tree.nodes[nodes[key]]


def followup_node_ids(state: RunState) -> set[str]:
    """Nodes researched for follow-ups, their sub-questions included: their findings go into
    the follow-up's answer, not into parts of their own."""
    roots = state.extra.followup_nodes.values()
    return {n for root in roots if root in state.tree.nodes for n in state.tree.subtree(root)}


def _next_open(state: RunState, node_id: str) -> Node | None:
    ids = state.tree.subtree(node_id)
    open_nodes = [state.tree.nodes[i] for i in ids if state.tree.nodes[i].status == "open"]
    return max(open_nodes, key=lambda n: (n.value, -int(n.id[1:])), default=None)
