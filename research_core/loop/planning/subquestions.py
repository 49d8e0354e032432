"""Sub-questions read off the question's own clauses, for when the planner cannot split it (issue
25): the question is cut at its sentence ends, colons, semicolons and commas; a clause that
only asks ("why", "how big is it now") is completed with the clause that says what the
question is about (its topic); a comparison or a list of named things ("A vs B", "(North,
Central and South)", "X and Y went …") gives one sub-question per thing. The question's words
are kept as written: no template is filled in, and the question itself is never its only
sub-question. `research_core.loop.planning.decomposition` adds what the evidence is about and
drops the clauses no source speaks to (requests, deadlines, greetings).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from research_core.models.schemas import SUBQUESTION_MIN_CHARS, SubQuestion
from research_core.text.periods import names_period, without_periods
from research_core.text.terms import content_terms, has_cjk, pos_tags

MAX_CHARS = 150
MIN_CHARS = SUBQUESTION_MIN_CHARS  # what the sub-question's own check accepts
# Measures of economic statistics (the headline series of statistical offices' releases):
# what a question asks about the thing it names.
_EN_MEASURES = ("sales", "prices", "price", "shipments", "exports", "imports", "output",
                "production", "capacity", "demand", "costs", "installations", "margins",
                "fees", "share", "volumes", "revenue", "investment", "supply", "spread",
                "throughput", "utilisation", "utilization", "generation", "consumption")
_ZH_MEASURES = ("价格", "销量", "产能", "出货量", "出口", "进口", "产量", "需求", "供需", "价差",
                "份额", "投资", "成本", "库存", "吞吐量", "利用率", "装机", "发电量", "消费量")
_MENTION = re.compile(r"<[@#!][^>]*>|(?<!\w)@\S+")
_SENTENCE = re.compile(r"(?<=[?？!！。；;])\s*|\n+|(?<=[a-z0-9)]\.)\s+(?=[A-Z])")
_HEAD = re.compile(r"[:：]\s*(?!\d)")
_CLAUSE = re.compile(r"\s*(?:[,，;；]|\s[—–-]+\s|—+)\s*(?:and\s+|以及|并且?|还有)?|"
                     r"\s+and\s+(?=(?:how|what|why|which|who|when|where|whether)\b)|"
                     # "… and describe its development …": a verb, a determiner and two words
                     # more open a clause of their own ("and B the other" does not; English
                     # grammar words, no field's vocabulary)
                     r"\s+and\s+(?=(?-i:[a-z]+)\s+(?:its|their|the|a|an|this|these|those|his|her|"
                     r"our|your|how|why|what|which|whether)(?:\s+[\w'-]+){2})", re.I)
_BRACKET = re.compile(r"[()（）]")
_GROUP = re.compile(r"[（(]([^()（）]{3,80})[)）]")
_LIST_SEP = re.compile(r"\s*(?:,|，|、|/)\s*(?:and\s+|or\s+)?|\s+(?:and|or|vs\.?|versus)\s+|"
                       r"\s*(?:和|与|及|对比|以及)\s*", re.I)
# A list set off by a dash or a colon ("… ports in Q3 — North, Central, South: throughput"):
# the group, and what ends it (kept, so the clauses around it stay apart).
_SET_OFF = re.compile(r"(?:\s[—–-]+\s|—+|[:：])\s*(?P<group>[^—–:：?？()（）]{3,80}?)"
                      r"(?P<end>\s*(?:\s[—–-]+\s|—+|[:：?？]|$))")
_VERSUS = re.compile(r"\s+(?:vs\.?|versus)\s+", re.I)
# "X and Y went …", "what caused X and Y prices to move …": the two things a clause opens
# with (after a wh-word and its verb), ended by a verb or by a measure said of both.
_PAIR = re.compile(r"^(?:(?:why|how|what)(?:\s+(?:did|do|does|have|has|had|are|were|is|was|"
                   r"caused|made|drove))?\s+)?"
                   r"(?P<a>[^,，:：]{2,40}?)\s*(?:\band\b|和|与|及)\s*(?P<b>[^,，:：]{2,40}?)"
                   r"(?=\s+(?:went|have|has|had|are|were|did|do|rose|fell|moved|diverged|"
                   + "|".join(_EN_MEASURES) + r")\b|(?:的|走势|价格|为何|为什么|分别))", re.I)
# A request around a question ("could you explain what …", "can you tell me why …", "please
# say how …"): English grammar, the question is what follows the frame.
_FRAME = re.compile(r"^(?:(?:could|can|would|will)\s+you\s+(?:please\s+)?|please\s+)[a-z]+\s+"
                    r"(?:(?:me|us)\s+)?(?=(?:how|what|why|which|who|when|where|whether)\b)",
                    re.I)
_THEY = re.compile(r"\b(?:them|they)\b")
_ZH_JOINS = ("和", "与", "及", "、", "跟")
# Interrogatives (English wh-words and "how"; Chinese question words): grammar, not a field's
# vocabulary. A clause that opens with one asks the sources something.
_ASKING = re.compile(r"^(?:how|what|why|which|who|when|where|whether)\b|"
                     r"什么|怎么|怎样|如何|为什么|为何|多少|哪", re.I)
ITEM_WORDS = 4  # a named thing in a list is short: "Firm A", "North", "锂电铜箔"


@dataclass(frozen=True)
class Clauses:
    """The question's clauses that say something, its topic (the clause that names most) and
    the things it names one by one (a comparison's sides, a list's items)."""

    topic: str
    asks: list[str]
    things: list[str]


def derive(question: str, limit: int = 4) -> list[SubQuestion]:
    """Up to `limit` sub-questions read off the question's clauses, most valuable first; []
    when the question asks one thing (it is then researched from the evidence)."""
    return as_subquestions(compose(clauses(question), question), limit)


def as_subquestions(texts: list[str], limit: int) -> list[SubQuestion]:
    """The texts as sub-questions, most valuable first; a text too short to research (a
    source's short title, "蜂业快讯") is none."""
    values = (0.9, 0.8, 0.7, 0.6)
    usable = [t for t in texts if len(t.strip()) >= MIN_CHARS][:limit]
    return [SubQuestion(question=t, value=values[min(i, 3)]) for i, t in enumerate(usable)]


def compose(c: Clauses, question: str) -> list[str]:
    """The sub-question texts of a question's clauses: one per named thing, then one per
    clause that asks something beside the topic (the topic first, unless it only names what
    each of them says already); never the question itself."""
    per_thing = [_for_thing(c, thing) for thing in c.things]
    per_ask = [_completed(resolved(ask, c.things), c.topic) for ask in c.asks
               if ask != c.topic]
    if not c.things and per_ask and (asks(c.topic) or not all(c.topic in t for t in per_ask)):
        per_ask.insert(0, c.topic)  # a name every ask carries would ask nothing more
    whole = _norm(without_mentions(question))
    texts = [_shorten(t) for t in [*per_thing, *per_ask]]
    return list(dict.fromkeys(t for t in texts if len(t) >= MIN_CHARS and _norm(t) != whole))


def resolved(ask: str, things: list[str]) -> str:
    """A clause's "them" or "they" as the things the question names ("the gap between them" of
    X and Y is the gap between X and Y): a sub-question is searched for on its own."""
    if len(things) < 2 or has_cjk(ask):
        return ask
    both = f"{', '.join(things[:-1])} and {things[-1]}"
    return _THEY.sub(both, ask)


def clauses(question: str) -> Clauses:
    """The question cut into the clauses that say something (a listed group of things is
    taken out first, so that its commas cut nothing). Its topic is the clause that names the
    most, a clause of a sentence that asks ("…?") first, then one that names the listed
    things, then one that asks ("how …", not "hey"); a clause that names nothing is kept
    only where it asks ("Why, and how big is it now?")."""
    text = without_mentions(question)
    things, text = _listed(text)
    said: list[tuple[str, bool]] = []
    for sentence in _SENTENCE.split(text):
        asked = sentence.rstrip().endswith(("?", "？"))
        for piece in (b for head in _HEAD.split(sentence) for p in _CLAUSE.split(head)
                      for b in _unbracketed(p)):
            piece = _FRAME.sub("", piece.strip(" .?？!！。,，"))
            if piece and (content_terms(piece) or asked):
                said.append((piece, asked))
    if not said:
        return Clauses(text, [], things)
    named = [p for p, _ in said]
    topic = max(said, key=lambda pa: (pa[1] and _naming(pa[0]) >= 2, _naming(pa[0]),
                                      _names_all(pa[0], things) or bool(_pair(pa[0])),
                                      asks(pa[0]), -named.index(pa[0])))[0]
    return Clauses(topic, list(dict.fromkeys(named)), things or _pair(topic))


def _unbracketed(piece: str) -> list[str]:
    """A clause cut where a bracket opens or closes that it does not close or open itself: a
    comma inside an aside ("with data (how much is what, and when)") cuts the aside in two,
    and neither half keeps a bracket of the other's."""
    if piece.count("(") + piece.count("（") == piece.count(")") + piece.count("）"):
        return [piece]
    return [p for p in _BRACKET.split(piece) if p.strip()]


def _naming(text: str) -> int:
    return len(set(content_terms(text)))


def without_mentions(question: str) -> str:
    """The question without its Slack mentions ("<@U0…>", "@RED") and extra spaces."""
    return " ".join(_MENTION.sub(" ", question).split())


def _listed(text: str) -> tuple[list[str], str]:
    """Named things the question lists in brackets ("(North, Central and South)", taken out
    of the text) or sets against each other ("Firm A vs Firm B in X")."""
    for match in _GROUP.finditer(text):
        group = match.group(1)
        items = _items(group)
        if len(items) >= 2 and not names_period(group):
            return items, " ".join((text[:match.start()] + text[match.end():]).split())
    for match in _SET_OFF.finditer(text):
        items = _items(match.group("group"))
        if len(items) >= 2 and all(_named(i) for i in items) and \
                not _VERSUS.search(match.group("group")):  # sides, named where they stand
            return items, " ".join((text[:match.start()] + match.group("end") +
                                    text[match.end():]).split())
    sides = _VERSUS.split(_HEAD.split(_SENTENCE.split(text)[0])[0])
    if len(sides) == 2:
        left, right = _last_words(sides[0]), _first_words(sides[1])
        return ([left, right] if left and right else []), text
    return [], text
def _names_all(clause: str, things: list[str]) -> bool:
    return bool(things) and all(t in clause for t in things)


def _named(item: str) -> bool:
    """An English list item that is a name: each of its words capitalised ("North", "Firm
    A"); a list of measures ("throughput, y/y") is asked of the things, not about them."""
    return not has_cjk(item) and all(w[:1].isupper() for w in item.split())


def _pair(topic: str) -> list[str]:
    """"X and Y went …" / "X和Y的…": the things a topic clause begins with."""
    if has_cjk(topic):
        return _zh_listed(topic)
    match = _PAIR.match(topic)
    if not match:
        return []
    a, b = match.group("a").strip(), match.group("b").strip()
    return [a, b] if _short(a) and _short(b) else []


def _zh_listed(text: str) -> list[str]:
    """Chinese things joined by a conjunction or "、" ("北部、中部和南部", "细羊毛和粗羊毛"),
    by jieba's part-of-speech tags: each as long (in words) as the first."""
    tagged = pos_tags(text)
    for i, (word, flag) in enumerate(tagged):
        if flag not in ("c", "x") or word not in _ZH_JOINS or i == 0:
            continue
        width = _noun_run(tagged[:i][::-1])
        if not width:
            continue
        items, at = ["".join(w for w, _ in tagged[i - width:i])], i
        while at < len(tagged) and tagged[at][0] in _ZH_JOINS:
            after = tagged[at + 1:at + 1 + width]
            if len(after) < width or _noun_run(after) < width:
                break
            items.append("".join(w for w, _ in after))
            at += 1 + width
        return items if len(items) >= 2 else []
    return []


def _noun_run(tagged: Sequence[tuple[str, str]]) -> int:
    run = 0
    for _, flag in tagged:
        if not flag.startswith(("n", "f", "eng")):
            break
        run += 1
    return min(run, 2)


def _items(group: str) -> list[str]:
    items = [i.strip(" .") for i in _LIST_SEP.split(group) if i and i.strip(" .")]
    return items if all(_short(i) for i in items) else []


def _short(item: str) -> bool:
    return (len(item) <= 10) if has_cjk(item) else 0 < len(item.split()) <= ITEM_WORDS


def _last_words(text: str) -> str:
    words = re.split(r"[—–:：,，;；]|\s-\s", text)[-1].split()  # after a clause's end
    return " ".join(words[-2:])


def _first_words(text: str) -> str:
    first = re.split(r"\s+(?:in|at|on|for|of)\s+|[,，:：]", text, maxsplit=1)[0]
    return " ".join(first.split()[:ITEM_WORDS]).strip()


def _for_thing(c: Clauses, thing: str) -> str:
    """The topic about one named thing: the span that names them all ("Firm A vs Firm B",
    "X and Y") names this one only; a topic that names none, or names them apart ("X went
    one way and Y the other"), is prefixed with it."""
    at = sorted((c.topic.find(t), t) for t in c.things if t in c.topic)
    if len(at) < 2:
        return f"{thing}{'：' if has_cjk(thing) else ': '}{c.topic}"
    first, last = at[0], at[-1]
    if all(_LIST_SEP.fullmatch(c.topic[a + len(t):b]) for (a, t), (b, _) in pairwise(at)):
        return " ".join(f"{c.topic[:first[0]]}{thing}{c.topic[last[0] + len(last[1]):]}".split())
    return _said_of(c.topic, first, last[0], thing)


def _said_of(topic: str, first: tuple[int, str], last_at: int, thing: str) -> str:
    """What a clause that names its things apart says of the first ("A went one way" of "A
    went one way and B the other", whose second half leaves the verb out), said of `thing`."""
    joins = [m for m in _CONJUNCTION.finditer(topic) if first[0] < m.start() and m.end() <= last_at]
    if not joins:
        return f"{thing}{'：' if has_cjk(thing) else ': '}{topic}"
    head = topic[:joins[-1].start()]
    return " ".join(f"{head[:first[0]]}{thing}{head[first[0] + len(first[1]):]}".split())


_CONJUNCTION = re.compile(r"\s+(?:and|vs\.?|versus)\s+", re.I)
_EN_TOKEN = re.compile(r"[^\s,;:!?()]+")


def conjuncts(clause: str) -> list[tuple[list[str], list[str]]]:
    """For each conjunction of an English clause, the word runs that may be set against each
    other across it: the runs of content words before it (each run's endings: "carbonate",
    "lithium carbonate") and the run that follows it (its beginnings), without measures
    ("prices") or periods. Which pair is parallel is for the embedder to say
    (`research_core.loop.planning.decomposition.coordinated`)."""
    if has_cjk(clause):
        return []
    found = []
    for match in _CONJUNCTION.finditer(clause):
        before = _runs(clause[:match.start()])
        after = _runs(clause[match.end():], first_only=True)
        lefts = [" ".join(run[i:]) for run in before for i in range(len(run))]
        rights = [" ".join(after[0][:i]) for i in range(1, len(after[0]) + 1)] if after else []
        found.append((lefts, rights))
    return found


def _runs(text: str, first_only: bool = False) -> list[list[str]]:
    """Runs of consecutive content words (at most ITEM_WORDS each, measures and periods
    ending a run); `first_only`: the first run, after any function words that open the text."""
    runs: list[list[str]] = [[]]
    for token in _EN_TOKEN.findall(text):
        word = token.strip(".'\"")
        if content_terms(word) and not names_measure(word, list(_EN_MEASURES)) \
                and not names_period(word):
            runs[-1] = [*runs[-1], word][-ITEM_WORDS:]
            if first_only and len(runs[-1]) == ITEM_WORDS:
                break
        elif runs[-1]:
            if first_only:
                break
            runs.append([])
    return [r for r in runs if r]


def _completed(ask: str, topic: str) -> str:
    """A clause that only asks ("why", "how big is the gap now") with the topic it is about;
    a clause that names what it asks about (a word of the topic, or enough words) as written."""
    own = set(content_terms(ask))
    if len(own) >= 4 or own & set(content_terms(topic)):
        return ask
    if has_cjk(ask):
        return f"{ask}：{topic}" if not own else f"{ask}（{topic}）"
    return f"{_capital(ask)}: {topic}" if not own else f"{ask} ({topic})"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def asks(clause: str) -> bool:
    """Whether a clause asks something ("how has it moved over the past year", "价格怎么走"),
    rather than asking the bot for something ("with sources", "附上出处")."""
    return bool(_ASKING.search(clause.strip()))


def is_part(clause: str, question: str) -> bool:
    """Whether the clause is less than the whole question (a sub-question may be it)."""
    return _norm(clause) != _norm(without_mentions(question)) and len(clause) >= MIN_CHARS


def as_question(text: str) -> str:
    return _shorten(text)


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    end = "？" if has_cjk(text) else "?"
    if len(text) > MAX_CHARS - 1:
        text = text[: MAX_CHARS - 2].rstrip(" ,;:—") + "…"
    return _capital(text if text.endswith(("?", "？")) else text + end)


def _norm(text: str) -> str:
    return "".join(ch for ch in text.casefold() if ch.isalnum())


_EN_WORD = re.compile(r"[a-z]+(?:-[a-z]+)*")  # "bike-share" is one word, no "share"
_LATEST = re.compile(
    r"\b(?:latest|current|currently|now|most recent)\b|最新|目前|当前|现在|最近一个月", re.I)


def asks_latest(question: str) -> bool:
    """Whether the question asks for the latest figures."""
    return _LATEST.search(question) is not None


def for_period(question: str, period: str) -> str:
    """The question's topic asked for one period ("2026年10月…", "… in October 2026")."""
    topic = " ".join(without_periods(clauses(question).topic).split()).strip(" ,，、（）()")
    return f"{period}{topic}？" if has_cjk(question) else f"{topic} in {period}?"


def names_measure(text: str, measures: list[str]) -> bool:
    """Whether the text names one of the measures: an English one as a word ("share", not
    "bike-share"; "price" also as "prices"), a Chinese one anywhere."""
    lowered = text.casefold()
    words = set(_EN_WORD.findall(lowered))
    return any(m in lowered if has_cjk(m) else (m in words or f"{m}s" in words)
               for m in measures)


def measures_in(question: str) -> list[str]:
    """The measures a question names ("sales", "价格"), lowercased; a plural also as
    singular."""
    lowered = question.casefold()
    found = [m for m in _ZH_MEASURES if m in lowered]
    words = set(_EN_WORD.findall(lowered))
    found += [m.rstrip("s") for m in _EN_MEASURES if m in words]
    return list(dict.fromkeys(found))
