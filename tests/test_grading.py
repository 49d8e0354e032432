"""The grader on hand-written answers (each check kind passing and failing), and suite loading."""

from __future__ import annotations

from pathlib import Path

import pytest

from research_core.errors import SuiteError
from research_core.evaluation.grading import Answer, all_passed, contains_number, failure, grade
from research_core.evaluation.suite import (
    Check,
    CheckArg,
    Requirement,
    load_suite,
    with_paraphrases,
)
from tests.conftest import write_doc

REPORT_EN = (
    "Battery-grade Lithium Carbonate averaged 86,200 yuan/t in October 2026 [1], "
    "down from the March peak of 9.68 [2]. Hydroxide prices diverged."
)
REPORT_ZH = (
    "2026年10月电池级碳酸锂均价为8.62万元/吨[1]，氢氧化锂与碳酸锂走势分化。"
    "华膜荆门项目规划24亿平方米。"
)


def answer(text: str, cited: set[str] | None = None, revised: bool = False) -> Answer:
    return Answer(text, frozenset(cited or set()), revised)


def check(kind: str, arg: CheckArg) -> Check:
    return Check(kind, arg)


def passes(a: Answer, kind: str, arg: CheckArg) -> bool:
    return failure(a, check(kind, arg)) is None


# ---- each check kind -----------------------------------------------------------------------

def test_mentions_any_passes_on_one_and_fails_on_none() -> None:
    a = answer(REPORT_EN)
    assert passes(a, "mentions_any", ("碳酸锂", "lithium carbonate"))
    assert not passes(a, "mentions_any", ("separator", "隔膜"))
    assert "mentions none of" in (failure(a, check("mentions_any", ("separator",))) or "")


def test_mentions_all_needs_every_string_and_names_the_missing() -> None:
    a = answer(REPORT_EN)
    assert passes(a, "mentions_all", ("lithium carbonate", "hydroxide"))
    why = failure(a, check("mentions_all", ("lithium carbonate", "separator")))
    assert why is not None and "'separator'" in why and "carbonate" not in why


def test_not_mentions_fails_on_a_forbidden_string() -> None:
    a = answer("The forum claims prices 站上15万 soon.")
    assert not passes(a, "not_mentions", ("站上15万", "12.8万元/吨"))
    assert "'站上15万'" in (failure(a, check("not_mentions", ("站上15万",))) or "")
    assert passes(answer(REPORT_ZH), "not_mentions", ("站上15万", "充电桩"))


def test_matching_is_case_insensitive() -> None:
    a = answer("LITHIUM HYDROXIDE fell; the Spread widened; LiOH 17.7K.")
    assert passes(a, "mentions_any", ("lithium hydroxide",))
    assert passes(a, "mentions_all", ("spread", "lioh"))
    assert not passes(a, "not_mentions", ("Lithium Hydroxide",))
    assert passes(a, "mentions_number", ("17.7k",))


def test_chinese_text() -> None:
    a = answer(REPORT_ZH)
    assert passes(a, "mentions_all", ("碳酸锂", "氢氧化锂", "分化"))
    assert passes(a, "mentions_number", ("8.62万",))
    assert passes(a, "mentions_number", ("24亿",))
    assert not passes(a, "mentions_number", ("4亿",))  # inside 24亿
    assert not passes(a, "mentions_any", ("铜箔", "加工费"))


def test_mentions_number_as_written() -> None:
    a = answer(REPORT_EN)
    assert passes(a, "mentions_number", ("8.62", "86,200"))
    assert not passes(a, "mentions_number", ("86200",))  # written with a separator only
    assert passes(answer("均价86200元/吨"), "mentions_number", ("86200",))
    assert not passes(a, "mentions_number", ("93,500", "9.35"))
    assert "states none of the numbers" in (failure(a, check("mentions_number", ("1.74",)))
                                           or "")


@pytest.mark.parametrize(("needle", "text"), [
    ("8.62", "price 18.62 yuan"),
    ("8.62", "price 8.625 yuan"),
    ("1.74", "fee 11.74万元/吨"),
    ("86,200", "186,200 yuan"),
    ("200", "1,200 yuan"),
    ("200元", "1200元"),
    ("1.2%", "up 11.2%"),
    ("8.62", "version 8.62.1"),
])
def test_a_number_does_not_match_inside_a_longer_number(needle: str, text: str) -> None:
    assert not contains_number(needle, text)


@pytest.mark.parametrize(("needle", "text"), [
    ("8.62", "price 8.62."),
    ("8.62", "(8.62)"),
    ("8.62", "8.62万元/吨"),
    ("1.74", "更正为1.74万元/吨"),
    ("4.9%", "fell -4.9% on the year"),
    ("1.86", "1.86, then 1.74"),
    ("1.74", "18.62 then 1.74"),  # a later, bounded occurrence still counts
])
def test_a_bounded_number_matches(needle: str, text: str) -> None:
    assert contains_number(needle, text)


def test_cites_any_and_cites_none() -> None:
    a = answer(REPORT_EN, {"stats-li-prices-2026-10", "blog-seo-lithium-2026-10"})
    assert passes(a, "cites_any", ("clma-flash-2026-10", "stats-li-prices-2026-10"))
    assert not passes(a, "cites_any", ("clma-flash-2026-10",))
    assert passes(a, "cites_none", ("forum-dianchiba-2026-10",))
    why = failure(a, check("cites_none", ("forum-dianchiba-2026-10", "blog-seo-lithium-2026-10")))
    assert why == "cites ['blog-seo-lithium-2026-10']"


def test_citations_are_ids_not_text() -> None:
    a = answer("see stats-li-prices-2026-10")
    assert not passes(a, "cites_any", ("stats-li-prices-2026-10",))


def test_revised_true_and_false() -> None:
    assert passes(answer("x", revised=True), "revised", True)
    assert not passes(answer("x"), "revised", True)
    assert failure(answer("x"), check("revised", True)) == (
        "no part was revised after the late documents arrived, citing one of them")
    assert passes(answer("x"), "revised", False)
    assert not passes(answer("x", revised=True), "revised", False)


# ---- groups --------------------------------------------------------------------------------

R1 = Requirement("R1", "carbonate", (
    check("mentions_any", ("碳酸锂", "lithium carbonate")),
    check("mentions_number", ("8.62", "86,200")),
    check("cites_any", ("stats-li-prices-2026-10",)),
))
R2 = Requirement("R2", "no hype", (
    check("cites_none", ("blog-seo-lithium-2026-10",)),
    check("not_mentions", ("12.8万",)),
))


def test_a_group_passes_only_when_all_its_checks_pass() -> None:
    good = answer(REPORT_EN, {"stats-li-prices-2026-10"})
    assert [g.passed for g in grade(good, [R1, R2])] == [True, True]
    assert all_passed(grade(good, [R1, R2]))
    uncited = answer(REPORT_EN, set())
    r1, r2 = grade(uncited, [R1, R2])
    assert not r1.passed and r2.passed
    assert [f.kind for f in r1.failures] == ["cites_any"]
    assert r1.first_reason().startswith("cites_any: cites none of")


def test_every_failing_check_of_a_group_is_listed() -> None:
    bad = answer("LiPF6 rose to 12.8万 [3]", {"blog-seo-lithium-2026-10"})
    r1, r2 = grade(bad, [R1, R2])
    assert [f.kind for f in r1.failures] == ["mentions_any", "mentions_number", "cites_any"]
    assert [f.kind for f in r2.failures] == ["cites_none", "not_mentions"]
    assert not all_passed([r1, r2])


def test_no_groups_is_not_all_passed() -> None:
    assert not all_passed(grade(answer("x"), []))


# ---- loading a suite -----------------------------------------------------------------------

TASKS_YAML = """
- id: t1
  question: "How did heat pump sales move?"
  as_of: 2026-10-31
  depth: standard
  events:
    - when: after_first_answer_part
      add_docs: [late-fix]
  requirements:
    - id: R1
      why: sales figure
      checks:
        - mentions_any: ["heat pump", "热泵"]
        - mentions_number: {any_of: ["214,000", "1.70", 86200]}
        - cites_any: [stats-sales]
    - id: R2
      checks:
        - revised: true
        - cites_none: [blog-prices]
        - not_mentions: ["charging pile"]
        - mentions_all: ["sales"]
"""


def make_suite(root: Path, tasks_yaml: str = TASKS_YAML) -> Path:
    (root / "corpus").mkdir(parents=True)
    (root / "corpus_late").mkdir()
    write_doc(root / "corpus", "stats-sales", ("official_statistics", "en", "2026-10-10",
                                               "Heat pump sales", "Sales reached 214,000."))
    write_doc(root / "corpus", "blog-prices", ("blog", "en", "2026-08-01", "Prices blog",
                                               "Prices are high."))
    write_doc(root / "corpus_late", "late-fix", ("official_statistics", "en", "2026-10-30",
                                                 "Correction", "Sales were 213,000."))
    (root / "tasks.yaml").write_text(tasks_yaml, "utf-8")
    return root


def test_a_suite_loads_into_tasks_requirements_and_checks(tmp_path: Path) -> None:
    suite = load_suite(make_suite(tmp_path))
    task = suite.task("t1")
    assert (task.question, task.as_of.isoformat(), task.depth) == (
        "How did heat pump sales move?", "2026-10-31", "standard")
    assert task.events[0].when == "after_first_answer_part"
    assert task.events[0].add_docs == ("late-fix",)
    r1, r2 = task.requirements
    assert (r1.id, r1.why, r2.why) == ("R1", "sales figure", "")
    assert r1.checks[1] == Check("mentions_number", ("214,000", "1.70", "86200"))
    assert r2.checks[0] == Check("revised", True)
    assert suite.corpus_dir == tmp_path / "corpus"
    assert suite.late_files == {"late-fix": tmp_path / "corpus_late" / "late-fix.md"}


def test_events_at_a_step_or_a_time(tmp_path: Path) -> None:
    text = TASKS_YAML.replace("when: after_first_answer_part", "when: after_step\n      step: 4")
    [event] = load_suite(make_suite(tmp_path / "a", text)).tasks[0].events
    assert (event.when, event.at, event.add_docs) == ("after_step", 4.0, ("late-fix",))
    text = TASKS_YAML.replace("when: after_first_answer_part",
                              "when: at_seconds\n      seconds: 2.5")
    [event] = load_suite(make_suite(tmp_path / "b", text)).tasks[0].events
    assert (event.when, event.at) == ("at_seconds", 2.5)


_DEPTH = "  depth: standard"
MALFORMED = {
    "unknown kind": ("        - cites_any: [stats-sales]", "        - mentions_some: [x]",
                     "unknown check kind 'mentions_some'"),
    "two keys": ("        - cites_any: [stats-sales]",
                 "        - {cites_any: [a], cites_none: [b]}", "one-key mapping"),
    "number without any_of": ('{any_of: ["214,000", "1.70", 86200]}', '["214,000"]',
                              "mentions_number takes {any_of"),
    "float number": ('"1.70", 86200', "1.70, 86200", "1.7 is not a string"),
    "revised not bool": ("revised: true", "revised: yes please", "revised takes true or false"),
    "bad date": ("as_of: 2026-10-31", "as_of: someday", "as_of 'someday' is not a date"),
    "bad depth": ("depth: standard", "depth: forever", "depth 'forever'"),
    "no question": ('question: "How did heat pump sales move?"', "question: ''",
                    "missing or empty 'question'"),
    "unknown late doc": ("add_docs: [late-fix]", "add_docs: [late-missing]",
                         "not in corpus_late/"),
    "unknown event": ("when: after_first_answer_part", "when: at_noon", "an event needs when"),
    "step without a step": ("when: after_first_answer_part", "when: after_step",
                            "an event after_step needs step: a number >= 0 (a whole step)"),
    "unknown cited id": ("cites_none: [blog-prices]", "cites_none: [blog-prices, blog-nope]",
                         "task t1 R2: cites_none names ['blog-nope'], not documents of"),
    "revised without an event": ("  events:\n    - when: after_first_answer_part\n"
                                 "      add_docs: [late-fix]\n", "",
                                 "task t1 R2: a revised check needs an event"),
    "empty checks": ("      checks:\n        - revised: true", "      checks: []",
                     "task t1 R2: 'checks' must be a non-empty list"),
    "duplicate group": ("    - id: R2", "    - id: R1", "duplicate task t1: requirement id: R1"),
    "paraphrases not a list": (_DEPTH, _DEPTH + '\n  paraphrases: "How did sales move?"',
                               "task t1: paraphrases must be a non-empty list of questions"),
    "no paraphrases": (_DEPTH, _DEPTH + "\n  paraphrases: []",
                       "task t1: paraphrases must be a non-empty list of questions"),
    "empty paraphrase": (_DEPTH, _DEPTH + '\n  paraphrases: ["How did sales move?", " "]',
                         "task t1: paraphrase ' ' is not a non-empty string"),
    "number paraphrase": (_DEPTH, _DEPTH + "\n  paraphrases: [42]",
                          "task t1: paraphrase 42 is not a non-empty string"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_suite_is_one_suite_error(tmp_path: Path, case: str) -> None:
    old, new, message = MALFORMED[case]
    assert old in TASKS_YAML
    text = TASKS_YAML.replace(old, new)
    if case == "empty checks":  # drop the rest of R2's checks too
        text = text.split("      checks: []")[0] + "      checks: []\n"
    with pytest.raises(SuiteError) as err:
        load_suite(make_suite(tmp_path, text))
    assert message in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(("text", "message"), [
    ("- : [", "not valid YAML"),
    ("{}", "non-empty list of tasks"),
    ("- just a string", "task #1 is not a mapping"),
])
def test_a_broken_tasks_file_is_one_suite_error(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SuiteError, match=message):
        load_suite(make_suite(tmp_path, text))


def test_missing_folders_and_unknown_tasks(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="suite folder not found"):
        load_suite(tmp_path / "nope")
    tmp_path.joinpath("empty").mkdir()
    with pytest.raises(SuiteError, match="no corpus/ folder"):
        load_suite(tmp_path / "empty")
    suite = load_suite(make_suite(tmp_path / "ok"))
    with pytest.raises(SuiteError, match="unknown task 'zz'; the suite has t1"):
        suite.task("zz")


# ---- paraphrases -----------------------------------------------------------------------------

def test_paraphrases_become_tasks_of_their_own(tmp_path: Path) -> None:
    text = TASKS_YAML.replace(_DEPTH, _DEPTH + '\n  paraphrases: ["Heat pump sales: how?"]')
    task = load_suite(make_suite(tmp_path, text)).task("t1")
    assert task.paraphrases == ("Heat pump sales: how?",)
    [variant] = task.variants()
    assert (variant.id, variant.question, variant.paraphrase_of) == (
        "t1~p1", "Heat pump sales: how?", "t1")
    assert (variant.as_of, variant.events, variant.requirements) == (
        task.as_of, task.events, task.requirements)
    assert variant.variants() == []


def test_a_paraphrase_file_adds_to_the_suites_paraphrases(tmp_path: Path) -> None:
    text = TASKS_YAML.replace(_DEPTH, _DEPTH + '\n  paraphrases: ["Sales: how?"]')
    suite = load_suite(make_suite(tmp_path / "suite", text))
    extra = tmp_path / "extra.yaml"
    extra.write_text('t1: ["Sales: how?", "What did sales do?"]\n', "utf-8")
    assert with_paraphrases(suite, extra).task("t1").paraphrases == (
        "Sales: how?", "What did sales do?")


@pytest.mark.parametrize(("text", "message"), [
    ('nope: ["Sales?"]\n', "extra.yaml: unknown task id(s) nope"),
    ("- t1\n", "extra.yaml: expected a mapping of task id to a list of paraphrases"),
    ("t1:\n", "extra.yaml: task t1: paraphrases must be a non-empty list of questions"),
    ('t1: ["Sales?", 7]\n', "extra.yaml: task t1: paraphrase 7 is not a non-empty string"),
    ("t1: [\n", "extra.yaml is not valid YAML"),
])
def test_a_bad_paraphrase_file_is_one_suite_error(tmp_path: Path, text: str,
                                                   message: str) -> None:
    suite = load_suite(make_suite(tmp_path / "suite"))
    extra = tmp_path / "extra.yaml"
    extra.write_text(text, "utf-8")
    with pytest.raises(SuiteError) as err:
        with_paraphrases(suite, extra)
    assert message in str(err.value) and "\n" not in str(err.value)
