"""An evaluation suite: a folder with `tasks.yaml`, `corpus/` and (optionally) `corpus_late/`.

Each task has an id, a question, an `as_of` date, a depth, optional dynamic events and
requirement groups of checks (see `research_core.evaluation.grading` for what each check kind
means), and optionally `paraphrases`: other wordings of the question, each run as a task of its
own (`<id>~p1`, …) with the same date, events and requirements (`redsearch eval --paraphrases`).
An event adds documents of corpus_late/ at a moment: `after_first_answer_part`, or a moment
that does not depend on the mode, `after_step` (with `step: k`) or `at_seconds` (with
`seconds: t`). Every id a check names must be a document of the suite, and a `revised` check
needs an event (it asks for a revision that cites a late document). Any defect is one
`SuiteError` line naming the task and what is wrong.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from research_core import safe_yaml
from research_core.errors import SuiteError
from research_core.search.corpus import parse_document

TEXT_KINDS = ("mentions_any", "mentions_all", "not_mentions")
ID_KINDS = ("cites_any", "cites_none")
CHECK_KINDS = (*TEXT_KINDS, "mentions_number", *ID_KINDS, "revised")
DEPTHS = ("auto", "standard", "deep")
FIRST_PART, AFTER_STEP, AT_SECONDS = "after_first_answer_part", "after_step", "at_seconds"
EVENT_WHENS = (FIRST_PART, AFTER_STEP, AT_SECONDS)
MAX_TASKS_BYTES = 1_000_000
_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[Tt ][\d:.]+(?:[Zz]|[+-][\d:]+)?)?")

CheckArg = tuple[str, ...] | bool


@dataclass(frozen=True)
class Check:
    """One check: `arg` is the list of strings (or ids) it looks for, or a bool for `revised`."""

    kind: str
    arg: CheckArg


@dataclass(frozen=True)
class Requirement:
    id: str
    why: str
    checks: tuple[Check, ...]


@dataclass(frozen=True)
class Event:
    when: str
    add_docs: tuple[str, ...]
    at: float = 0.0  # the step (after_step) or the seconds (at_seconds)


@dataclass(frozen=True)
class Task:
    id: str
    question: str
    as_of: dt.date
    depth: str
    events: tuple[Event, ...]
    requirements: tuple[Requirement, ...]
    paraphrases: tuple[str, ...] = ()
    paraphrase_of: str = ""  # the original task's id, for a paraphrase's task

    def variants(self) -> list[Task]:
        """The task's paraphrases as tasks: `<id>~p1`, … with the same everything else."""
        return [replace(self, id=f"{self.id}~p{n}", question=text, paraphrases=(),
                        paraphrase_of=self.id) for n, text in enumerate(self.paraphrases, 1)]


@dataclass(frozen=True)
class Suite:
    tasks: tuple[Task, ...]
    corpus_dir: Path
    late_dir: Path | None
    late_files: dict[str, Path]

    def task(self, task_id: str) -> Task:
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise SuiteError(f"unknown task {task_id!r}; the suite has "
                         f"{', '.join(t.id for t in self.tasks)}")


def load_suite(folder: Path) -> Suite:
    """Read and check a suite folder; every `add_docs` id must be a document of corpus_late/."""
    if not folder.is_dir():
        raise SuiteError(f"suite folder not found: {folder}")
    corpus_dir = folder / "corpus"
    if not corpus_dir.is_dir():
        raise SuiteError(f"suite has no corpus/ folder: {folder}")
    late_dir = folder / "corpus_late" if (folder / "corpus_late").is_dir() else None
    late_files = _late_files(late_dir)
    tasks = parse_tasks(read_yaml(folder / "tasks.yaml"))
    known = set(_late_files(corpus_dir)) | set(late_files)
    for task in tasks:
        _check_late_ids(task, late_files)
        _check_cited_ids(task, known)
        _check_revised(task)
    return Suite(tasks, corpus_dir, late_dir, late_files)


def read_yaml(path: Path) -> Any:
    try:
        return safe_yaml.load_file(path, MAX_TASKS_BYTES)
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(f"cannot read {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise SuiteError(f"{path.name} is not valid YAML: " + " ".join(str(exc).split())) from exc


def with_paraphrases(suite: Suite, path: Path) -> Suite:
    """The suite with the paraphrases of a YAML file (task id → list of questions) added to
    its tasks' own."""
    raw = read_yaml(path)
    if not isinstance(raw, dict) or not raw:
        raise SuiteError(f"{path.name}: expected a mapping of task id to a list of paraphrases")
    known = {t.id for t in suite.tasks}
    unknown = sorted(str(k) for k in raw if k not in known)
    if unknown:
        raise SuiteError(f"{path.name}: unknown task id(s) {', '.join(unknown)}")
    tasks = tuple(_add_paraphrases(t, raw, path.name) for t in suite.tasks)
    return replace(suite, tasks=tasks)


def _add_paraphrases(task: Task, raw: dict[Any, Any], where: str) -> Task:
    if task.id not in raw:
        return task
    added = parse_paraphrases(raw[task.id], f"{where}: task {task.id}")
    return replace(task, paraphrases=tuple(dict.fromkeys(task.paraphrases + added)))


def _late_files(late_dir: Path | None) -> dict[str, Path]:
    """Document id → file, from the front matter of every document of the folder."""
    if late_dir is None:
        return {}
    return {parse_document(p).source_id: p for p in sorted(late_dir.glob("*.md")) if p.is_file()}


def _check_late_ids(task: Task, late_files: dict[str, Path]) -> None:
    for event in task.events:
        missing = [d for d in event.add_docs if d not in late_files]
        if missing:
            raise SuiteError(f"task {task.id}: event adds {missing}, not in corpus_late/")


def _check_cited_ids(task: Task, known: set[str]) -> None:
    for req in task.requirements:
        for check in req.checks:
            unknown = [i for i in check.arg if i not in known] \
                if check.kind in ID_KINDS and isinstance(check.arg, tuple) else []
            if unknown:
                raise SuiteError(f"task {task.id} {req.id}: {check.kind} names {unknown}, "
                                 "not documents of corpus/ or corpus_late/")


def _check_revised(task: Task) -> None:
    revised = [r.id for r in task.requirements for c in r.checks if c.kind == "revised"]
    if revised and not task.events:
        raise SuiteError(f"task {task.id} {revised[0]}: a revised check needs an event that "
                         "adds late documents")


def parse_tasks(raw: Any) -> tuple[Task, ...]:
    """The tasks of a loaded tasks.yaml (a non-empty list of mappings with unique ids)."""
    if not isinstance(raw, list) or not raw:
        raise SuiteError("tasks.yaml must be a non-empty list of tasks")
    tasks = tuple(parse_task(item, n) for n, item in enumerate(raw, 1))
    _unique([t.id for t in tasks], "task id")
    return tasks


def parse_task(raw: Any, number: int) -> Task:
    if not isinstance(raw, dict):
        raise SuiteError(f"task #{number} is not a mapping")
    task_id = _text(raw, "id", f"task #{number}")
    where = f"task {task_id}"
    depth = str(raw.get("depth", "auto"))
    if depth not in DEPTHS:
        raise SuiteError(f"{where}: depth {depth!r} is not one of {', '.join(DEPTHS)}")
    requirements = tuple(parse_requirement(r, where) for r in _list(raw, "requirements", where))
    _unique([r.id for r in requirements], f"{where}: requirement id")
    events = tuple(parse_event(e, where) for e in raw.get("events") or [])
    paraphrases = parse_paraphrases(raw["paraphrases"], where) if "paraphrases" in raw else ()
    return Task(task_id, _text(raw, "question", where), _date(raw.get("as_of"), where), depth,
                events, requirements, paraphrases)


def parse_paraphrases(value: Any, where: str) -> tuple[str, ...]:
    """A non-empty list of non-empty strings, each another wording of the question."""
    if not isinstance(value, list) or not value:
        raise SuiteError(f"{where}: paraphrases must be a non-empty list of questions")
    bad = [item for item in value if not isinstance(item, str) or not item.strip()]
    if bad:
        raise SuiteError(f"{where}: paraphrase {bad[0]!r} is not a non-empty string")
    return tuple(item.strip() for item in value)


def parse_requirement(raw: Any, where: str) -> Requirement:
    if not isinstance(raw, dict):
        raise SuiteError(f"{where}: a requirement is not a mapping")
    req_id = _text(raw, "id", where)
    here = f"{where} {req_id}"
    checks = tuple(parse_check(c, here) for c in _list(raw, "checks", here))
    return Requirement(req_id, str(raw.get("why") or ""), checks)


def parse_check(raw: Any, where: str) -> Check:
    """A one-key mapping {kind: argument}."""
    if not isinstance(raw, dict) or len(raw) != 1:
        raise SuiteError(f"{where}: a check must be a one-key mapping like {{mentions_any: [..]}}")
    kind, value = next(iter(raw.items()))
    if kind not in CHECK_KINDS:
        raise SuiteError(f"{where}: unknown check kind {kind!r}")
    if kind == "revised":
        if not isinstance(value, bool):
            raise SuiteError(f"{where}: revised takes true or false, not {value!r}")
        return Check(kind, value)
    if kind == "mentions_number":
        if not isinstance(value, dict) or set(value) != {"any_of"}:
            raise SuiteError(f"{where}: mentions_number takes {{any_of: [..]}}")
        value = value["any_of"]
    return Check(kind, _strings(value, f"{where} {kind}"))


def parse_event(raw: Any, where: str) -> Event:
    if not isinstance(raw, dict) or raw.get("when") not in EVENT_WHENS:
        raise SuiteError(f"{where}: an event needs when: one of {', '.join(EVENT_WHENS)}")
    when = str(raw["when"])
    docs = _strings(raw.get("add_docs"), f"{where} event add_docs")
    if when == FIRST_PART:
        return Event(when, docs)
    key = "step" if when == AFTER_STEP else "seconds"
    at = raw.get(key)
    if isinstance(at, bool) or not isinstance(at, int | float) or at < 0 or (
            key == "step" and not isinstance(at, int)):
        raise SuiteError(f"{where}: an event {when} needs {key}: a number >= 0"
                         + (" (a whole step)" if key == "step" else ""))
    return Event(when, docs, float(at))


def _strings(value: Any, where: str) -> tuple[str, ...]:
    """A non-empty list of strings; whole numbers are taken as written, but a YAML float is
    refused, because it would lose what was written (1.70 loads as 1.7): quote it."""
    if not isinstance(value, list) or not value:
        raise SuiteError(f"{where}: expected a non-empty list")
    out: list[str] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, str | int):
            raise SuiteError(f"{where}: {item!r} is not a string (quote numbers with a point)")
        if not str(item).strip():
            raise SuiteError(f"{where}: an entry is empty")
        out.append(str(item))
    return tuple(out)


def _text(raw: dict[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise SuiteError(f"{where}: missing or empty {key!r}")
    return value.strip()


def _list(raw: dict[str, Any], key: str, where: str) -> list[Any]:
    value = raw.get(key)
    if not isinstance(value, list) or not value:
        raise SuiteError(f"{where}: {key!r} must be a non-empty list")
    return value


def _date(value: Any, where: str) -> dt.date:
    """`YYYY-MM-DD` (the loader keeps dates as text; a time part is ignored)."""
    match = _DATE.fullmatch(value.strip()) if isinstance(value, str) else None
    try:
        if match:
            return dt.date.fromisoformat(match.group(1))
    except ValueError:
        pass
    raise SuiteError(f"{where}: as_of {value!r} is not a date (YYYY-MM-DD)")


def _unique(ids: list[str], what: str) -> None:
    duplicates = sorted(i for i, n in Counter(ids).items() if n > 1)
    if duplicates:
        raise SuiteError(f"duplicate {what}: {', '.join(duplicates)}")
