"""The planner tier's decisions: splitting a node, writing query variants, reflecting."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Sequence

from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.goal_tree import GoalTree, Node
from research_core.loop.planning import subquestions
from research_core.models.gateway import Gateway
from research_core.models.prompts import render
from research_core.models.schemas import Decomposition, QueryPlan, ReflectionOut, SubQuestion
from research_core.protocols import TimeRange
from research_core.text.asking import Asked
from research_core.text.terms import content_terms, function_words

MIN_RANGE_DAYS = 28
FALLBACK_QUERIES = 3  # the most a query plan holds
FEEDBACK_TERMS = 4  # words of the question, and words of the kept texts, in a feedback query
FEEDBACK_TEXTS = 2  # kept texts a word must occur in before the feedback query adds it
QUERY_CHARS = 120
# What reflection reads of an item: its id, source, date and the start of its text, enough to
# judge whether it is on the goal (a body read's whole paragraphs are not needed for that).
REFLECT_ITEM_CHARS = 200


async def decompose(gw: Gateway, goal: str, node: Node, known: str, max_children: int,
                    taken: set[str], deep: bool = False) -> list[SubQuestion] | None:
    """Sub-questions for `node`, most valuable first, none repeating a question in `taken`;
    `deep` (applied) composes the deep instructions. None when the planner's reply is
    unusable (the caller falls back: `research_core.loop.planning.decomposition` for the root)."""
    messages = render("decompose", deep, goal=goal, question=node.question,
                      known=known or "nothing yet", max_children=max_children)

    def check(out: Decomposition) -> str | None:
        questions = [s.question for s in out.subquestions]
        return _duplicate_problem({node.question, goal, *taken}, questions)

    out = await gw.try_structured("planner", "decompose", messages, Decomposition, check)
    if out is None:
        return None
    ranked = sorted(out.subquestions, key=lambda s: -s.value)
    return [s for s in ranked if s.question not in taken][:max_children]


def split_fallback(asked: Asked) -> list[SubQuestion]:
    """For the root, where no evidence is at hand (the plan preview): sub-questions read off
    the question's clauses (`research_core.loop.planning.subquestions`). In a run the engine splits
    from the evidence instead (`research_core.loop.planning.decomposition`)."""
    return subquestions.derive(asked)


def _duplicate_problem(taken: set[str], questions: list[str]) -> str | None:
    lowered = [q.strip().lower() for q in questions]
    if len(set(lowered)) != len(lowered):
        return "two sub-questions are the same; make each one distinct"
    if {t.strip().lower() for t in taken} & set(lowered):
        return "a sub-question repeats a question already in the plan; give new, narrower ones"
    return None


async def plan_queries(gw: Gateway, node: Node, sent: list[str], as_of: dt.date,
                       variants: int, deep: bool = False, relied: str = "",
                       feedback: Sequence[str] = ()) -> QueryPlan:
    """Up to `variants` distinct queries for the node, with an optional narrower date range;
    in deep, one of them seeks sources that correct or contradict the figures `relied` on;
    `feedback`: the node's best judged hits, whose words the fallback's next query adds."""
    messages = render("plan_query", deep, question=node.question, as_of=as_of.isoformat(),
                      variants=variants, sent="; ".join(sent[-6:]) or "none",
                      relied=relied or "none yet")

    def check(plan: QueryPlan) -> str | None:
        return _range_problem(plan, as_of)

    plan = await gw.structured("planner", "plan_query", messages, QueryPlan,
                               lambda: query_fallback(node.asked, deep and bool(relied),
                                                      feedback),
                               check)
    unique = list(dict.fromkeys(q.strip() for q in plan.queries))
    return plan.model_copy(update={"queries": unique[:variants]})


CORRECTION_WORDS_ZH = "更正 修正 勘误 修订"
CORRECTION_WORDS_EN = "correction corrected revised erratum"


def query_fallback(asked: Asked, seek_corrections: bool = False,
                   feedback: Sequence[str] = ()) -> QueryPlan:
    """The question itself, and its content words as a keyword query; `seek_corrections`
    (deep, once it leans on figures): first the content words with the words a correction,
    a revision or a newer version is announced with; `feedback` (texts already judged for the
    question): first the question's words with the words those texts use most (relevance
    feedback: a second round asks in the sources' own words, in their language too)."""
    skip = function_words()  # "could", "you", "please": words a search engine cannot use
    question = asked.text
    keywords = " ".join([t for t in asked.words if t not in skip][:8])[:QUERY_CHARS]
    queries = [question[:QUERY_CHARS]] + ([keywords] if keywords and keywords != question else [])
    if feedback and (expanded := _expanded(asked, feedback)):
        queries.insert(0, expanded)
    if seek_corrections and keywords:
        asking = CORRECTION_WORDS_ZH if asked.chinese else CORRECTION_WORDS_EN
        queries.insert(0, f"{' '.join(asked.words[:4])} {asking}"[:QUERY_CHARS])
    return QueryPlan(queries=queries[:FALLBACK_QUERIES])


def _expanded(asked: Asked, feedback: Sequence[str]) -> str:
    """The question's content words and the words the kept texts use most that it lacks."""
    own = asked.content
    counts = Counter(t for text in feedback for t in dict.fromkeys(content_terms(text))
                     if t not in own and not t.isdigit())
    extra = [t for t, n in counts.most_common(FEEDBACK_TERMS) if n >= FEEDBACK_TEXTS]
    return " ".join([*own[:FEEDBACK_TERMS], *extra])[:QUERY_CHARS] if extra else ""


def _range_problem(plan: QueryPlan, as_of: dt.date) -> str | None:
    until = dt.date.fromisoformat(plan.until) if plan.until else as_of
    if until > as_of:
        return f"until {plan.until} is after the as-of date {as_of}"
    if plan.since and (until - dt.date.fromisoformat(plan.since)).days < MIN_RANGE_DAYS:
        return f"the range {plan.since}..{until} is shorter than {MIN_RANGE_DAYS} days"
    return None


def time_range(plan: QueryPlan, as_of: dt.date, lookback_days: int | None) -> TimeRange:
    """The range sent to the backend: never past the as-of date."""
    default_since = as_of - dt.timedelta(days=lookback_days) if lookback_days else None
    since = dt.date.fromisoformat(plan.since) if plan.since else default_since
    until = dt.date.fromisoformat(plan.until) if plan.until else as_of
    return TimeRange(since=since, until=min(until, as_of))


async def reflect(gw: Gateway, goal: str, current: Node, open_nodes: list[Node],
                  evidence: list[Evidence]) -> ReflectionOut:
    """The three questions of DESIGN §2, about the evidence gathered so far."""
    shown = evidence[-12:]
    messages = render(
        "reflect", goal=goal, current=current.question,
        open="; ".join(n.question for n in open_nodes[:6]) or "none",
        evidence="\n".join(e.line()[:REFLECT_ITEM_CHARS] for e in shown) or "no evidence yet",
    )
    known = {e.id for e in shown}

    def check(out: ReflectionOut) -> str | None:
        unknown = [i for i in out.off_goal if i not in known]
        return f"unknown evidence ids {unknown}; use ids from the list" if unknown else None

    return await gw.structured(
        "planner", "reflect", messages, ReflectionOut,
        lambda: ReflectionOut(answers_goal=bool(evidence), drifted=False), check,
    )


def upgrade_reason(tree: GoalTree) -> str:
    """Why deeper research would pay off now ('' when it would not): thin or open coverage."""
    subs = [n for n in tree.nodes.values() if n.depth > 0 and n.status != "pruned"]
    thin = [n for n in subs if n.status == "insufficient"]
    open_ = [n for n in subs if n.status == "open"]
    if thin:
        return f"{len(thin)} sub-question(s) ended with insufficient evidence"
    if len(open_) >= 2:
        return f"{len(open_)} sub-questions are still open at the usage reminder"
    return ""
