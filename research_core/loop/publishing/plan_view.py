"""A run's goal tree as a plan (`research_core.plan`), read from its state and its run log.

The plan's title says what the run is doing ("Researching — step 7 of 36, standard"); the first
task is splitting the question; then one task per sub-question, in tree order: pending, in
progress while it is the node worked on, complete with its finding (its figures kept) and
sources, or error with the reason it has too little evidence or was dropped. The decisions of
the mechanisms on a node — reflection, backtracking, deep requested / applied / refused,
conflicting figures, what is still missing — are its details, in words a person reads (never
the mechanisms' internal state). A steer (what a person wrote to the running research) is a
task of its own after the first, naming who asked and what it did: what it moved first, dropped
or added (researched next), or why it changed nothing; the sub-questions it dropped, added or
moved first say so. `PLAN_EVENTS` are the run-log kinds after which the plan may
read differently.
"""

from __future__ import annotations

import re

from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.goal_tree import Node
from research_core.loop.memory.node_conflicts import find_conflicts
from research_core.loop.memory.state import RunState
from research_core.loop.publishing.followup import followup_node_ids
from research_core.loop.publishing.progress_notes import deep_note
from research_core.loop.review.steering import described
from research_core.plan import PlanSource, PlanTask, PlanView, TaskStatus
from research_core.runlog import LogEvent
from research_core.text.figures import figures_in
from research_core.wording import ENGLISH, N_, Words, for_question

PLAN_EVENTS = frozenset({"start", "resume", "focus", "expand", "keep", "done", "thin",
                         "read-cap", "reflect", "backtrack", "budget", "memory", "publish",
                         "finalise", "report", "discard", "steer", "steer-focus"})
DETAILS_SHOWN = 5
SOURCES_SHOWN = 5
STEERS_SHOWN = 5  # a plan's first tasks are never folded: a flood of steers is cut
LINE_CHARS = 300
ROOT_TITLE = N_("Split the question into sub-questions")
_EVIDENCE_TAG = re.compile(r"^E\d+ \[[^\]]*\]\s*")  # "E3 [source; publisher; date] " of a line
# the openings of a summary the fallback writes (`research_core.loop.memory.memory`)
BEST_SUPPORTED, NOTHING_FOUND = "Best supported: ", "No reliable evidence was found."


def plan_view(state: RunState) -> PlanView:
    events = _events_by_node(state)
    w = for_question(state.question)
    tasks = [_root_task(state, events.get(state.tree.root_id, []), w),
             *steer_tasks(state, w)]
    hidden = followup_node_ids(state)
    for node in _tree_order(state):
        if node.depth > 0 and node.id not in hidden:
            tasks.append(_task(state, node, events.get(node.id, []), w))
    return PlanView(_title(state, w), tuple(tasks))


def _title(state: RunState, w: Words) -> str:
    mode, total = w(MODES.get(_mode(state), _mode(state))), _total_steps(state)
    if state.status == "finished":
        return w("Done — {mode}", mode=mode)
    if state.status == "stopped":
        return w.count(state.step, "Stopped after {n} step", "Stopped after {n} steps")
    if state.status == "failed":
        return w.count(state.step, "Failed after {n} step", "Failed after {n} steps")
    if state.log.of_kind("finalise"):
        return w("Writing the report — {mode}", mode=mode)
    if state.step == 0:
        return w("Planning — splitting the question ({mode})", mode=mode)
    if total:
        return w("Researching — step {n} of {total}, {mode}", n=state.step, total=total,
                 mode=mode)
    return w("Researching — step {n}, {mode}", n=state.step, mode=mode)


MODES = {"standard": N_("standard"), "deep": N_("deep"), "auto": N_("auto")}


def _mode(state: RunState) -> str:
    """The mode the run is in now: deep once deep is applied, standard once it is refused."""
    mode: str = state.mode
    for event in state.log.of_kind("budget"):
        what = event.data.get("event")
        if what == "start":  # "standard mode, deep state standard" (a resumed run's mode too)
            mode = event.message.split(" mode", 1)[0]
        if what == "deep-applied" or (what == "start" and "deep state deep" in event.message):
            mode = "deep"
        elif what == "deep-refused":
            mode = "standard"
    return mode


def _total_steps(state: RunState) -> int | None:
    totals = [e.data["totals"] for e in state.log.of_kind("budget")
              if isinstance(e.data.get("totals"), dict)]
    steps = totals[-1].get("steps") if totals else None
    return steps if isinstance(steps, int) else None


def _tree_order(state: RunState) -> list[Node]:
    order: list[Node] = []

    def visit(node_id: str) -> None:
        node = state.tree.nodes[node_id]
        order.append(node)
        for child in node.children:
            visit(child)

    visit(state.tree.root_id)
    return order


def _events_by_node(state: RunState) -> dict[str, list[LogEvent]]:
    """Each event about a node under that node; a run-wide decision (deep) under the node
    worked on at that moment, or under the root."""
    found: dict[str, list[LogEvent]] = {}
    focus = state.tree.root_id
    for event in state.log.events:
        if event.kind == "focus":
            focus = str(event.data.get("node") or focus)
        node = event.data.get("node")
        if event.kind == "budget":
            node = focus if event.step > 0 else state.tree.root_id
        elif event.kind == "publish":
            node = _part_of(event)
        if isinstance(node, str) and node in state.tree.nodes:
            found.setdefault(node, []).append(event)
    return found


def _part_of(event: LogEvent) -> str | None:
    """The part key of a publication event (`run/part/vN`): a node's id for its part."""
    parts = str(event.data.get("key") or "").split("/")
    return parts[1] if len(parts) == 3 else None


def _root_task(state: RunState, events: list[LogEvent], w: Words) -> PlanTask:
    root = state.tree.root
    children = [state.tree.nodes[c] for c in root.children]
    status: TaskStatus = "complete" if children else "in_progress"
    if not children and state.status != "running":
        status = "error"
    added = sum(1 for e in events if e.kind == "expand" and "reflection added" in e.message)
    output = w.count(len(children), "{n} sub-question", "{n} sub-questions") if children else ""
    if added:
        output += " " + w("({n} added by reflection)", n=added)
    return PlanTask(root.id, w(ROOT_TITLE), status, output, _details(state, root, events, w))


def _task(state: RunState, node: Node, events: list[LogEvent], w: Words) -> PlanTask:
    status, output = _status_and_output(state, node, events, w)
    return PlanTask(node.id, _clip(node.question), status, _clip(output),
                    _details(state, node, events, w), _sources(state.kept_for({node.id})),
                    node.parent_id)


def _status_and_output(state: RunState, node: Node, events: list[LogEvent],
                       w: Words) -> tuple[TaskStatus, str]:
    kept = state.kept_for({node.id})
    if node.status == "done":
        return "complete", _finding(state, node, kept, w)
    if node.status == "insufficient":
        thin = w("too little reliable evidence")
        return "error", w("Insufficient evidence: {why}",
                          why=_reason(events, ("thin", "read-cap"), thin, w))
    if node.status == "pruned":
        if _steered(state, node.id, "dropped"):
            return "error", w("Dropped, as asked in the thread")
        drifted = w("its branch drifted off the question")
        return "error", w("Dropped: {why}", why=_reason(events, ("backtrack",), drifted, w))
    if node.status == "expanded":
        return "in_progress", w("Split into {n} narrower sub-questions", n=len(node.children))
    if state.status == "running" and state.working.node_id == node.id:
        return "in_progress", w.count(len(kept), "Searching… {n} reliable item so far",
                                      "Searching… {n} reliable items so far") if kept \
            else w("Searching…")
    return "pending", ""


def _finding(state: RunState, node: Node, kept: list[Evidence], w: Words) -> str:
    """What was found, in one line that keeps its figures: the summary's conclusion when it
    states figures, else the best evidence line that does."""
    summary = state.summaries.get(node.id)
    if summary is not None and figures_in(summary.conclusion):
        return _one_line(_conclusion(summary.conclusion, w))
    lines = (summary.evidence if summary else []) + [
        e.text for e in sorted(kept, key=lambda e: -e.score)]
    with_figures = [_EVIDENCE_TAG.sub("", line) for line in lines if figures_in(line)]
    if with_figures:
        return _one_line(with_figures[0])
    return _one_line(_conclusion(summary.conclusion, w)) if summary else w.count(
        len(kept), "{n} reliable item found", "{n} reliable items found")


def _conclusion(said: str, w: Words) -> str:
    """A summary's conclusion, the fallback's own words in the thread's language (what it
    quotes from a source as written)."""
    if said.startswith(BEST_SUPPORTED):
        return w("Best supported: {line}", line=said[len(BEST_SUPPORTED):])
    return w("No reliable evidence was found.") if said == NOTHING_FOUND else said


def _reason(events: list[LogEvent], kinds: tuple[str, ...], default: str, w: Words) -> str:
    said = [e for e in events if e.kind in kinds]
    if said and said[-1].kind == "backtrack":
        return default  # its message is the log's (node ids, counts), not a person's words
    return _plain(said[-1]) if said and w.language == ENGLISH else default  # the log's English


def steer_tasks(state: RunState, w: Words) -> list[PlanTask]:
    """One task per steer read (the latest few): what the person wrote, who, and what it
    changed."""
    return [_steer_task(state, e, w) for e in state.log.of_kind("steer")[-STEERS_SHOWN:]]


def _steer_task(state: RunState, event: LogEvent, w: Words) -> PlanTask:
    """A steer's task: what the person wrote, and what it did (`steering.described`)."""
    said = " ".join(str(event.data.get("text") or "").split())
    output, details = described(event.data, state, w)
    return PlanTask(f"steer-{event.seq}", _clip(w("Steer: “{said}”", said=said)), "complete",
                    output,
                    tuple(_clip(d) for d in details[:DETAILS_SHOWN]),
                    asked_by=str(event.data.get("who") or ""))


def _steered(state: RunState, node_id: str, what: str) -> bool:
    """Whether a steer moved the node first, added or dropped it (or, dropped, the narrowing
    a steer asked for: `steering.keep_focus`)."""
    return any(node_id in (e.data.get(what) or []) for e in state.log.events
               if e.kind in ("steer", "steer-focus"))


def _plain(event: LogEvent) -> str:
    """An event's message without the node id it starts with."""
    head, sep, rest = event.message.partition(": ")
    return rest if sep and head.startswith("N") and head[1:].isdigit() else event.message


def _details(state: RunState, node: Node, events: list[LogEvent],
             w: Words) -> tuple[str, ...]:
    lines: list[str] = []
    for event in events:
        line = _detail(event, node, w, state)
        if line and line not in lines:
            lines.append(line)
    lines += [w("Sources disagree: {figures}", figures=c.figures())
              for c in find_conflicts(state.kept_for({node.id}))][:2]
    if _steered(state, node.id, "added"):
        lines.append(w("Added as asked in the thread, researched next"))
    if _steered(state, node.id, "raised"):
        lines.append(w("Moved first, as asked in the thread"))
    if node.status == "open" and node.depth > 0 and (
            state.status != "running" or state.log.of_kind("finalise")):
        lines.append(w("Still missing: not researched before the run ended"))
    return tuple(_clip(line) for line in lines[-DETAILS_SHOWN:])


def _titles(state: RunState) -> dict[str, str]:
    """Each kept source's title (a revision's reason names sources by id)."""
    return {e.source_id: e.title or e.publisher for e in state.evidence if e.title or e.publisher}


def _detail(event: LogEvent, node: Node, w: Words, state: RunState) -> str | None:
    if event.kind == "budget":
        return deep_note(event, w)
    # a reflection's own answers stay in the run log; the plan shows what it changed (a
    # branch dropped, a neglected sub-question added)
    if event.kind == "backtrack":
        return w("Backtracked: this line of research drifted off the question")
    if event.kind == "expand" and "reflection added" in event.message and \
            event.data.get("node") == node.id:
        return w("Added by reflection: a neglected sub-question")
    if event.kind == "thin" and node.status != "insufficient":  # the log's English, or:
        return _plain(event) if w.language == ENGLISH else w("Too little evidence yet")
    if event.kind == "publish":
        if not event.message.startswith("revised"):
            return w("Answer part published")
        _, _, why = event.message.partition(": ")
        for source_id, title in _titles(state).items():  # only for a revision's reason
            why = why.replace(source_id, title)
        return w("Answer part revised: {why}", why=why) if why else w("Answer part revised")
    return None


def _sources(kept: list[Evidence]) -> tuple[PlanSource, ...]:
    seen: dict[str, PlanSource] = {}
    for item in sorted(kept, key=lambda e: -e.score):
        if item.url and item.url not in seen:
            seen[item.url] = PlanSource(item.url, item.title or item.publisher or item.source_id)
    return tuple(list(seen.values())[:SOURCES_SHOWN])


def _one_line(text: str) -> str:
    return _clip(" ".join(text.split()))


def _clip(text: str, limit: int = LINE_CHARS) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"
