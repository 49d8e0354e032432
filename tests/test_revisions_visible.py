"""Revisions a reader can see (issue 44, item 6). A published figure that a later release
corrects is revised in place, the part leading with the correcting sentence, and only a real
correction revises: a neighbouring month's value, a range quoted again or a figure of the
year before re-values nothing, so that a part's bounded revisions are still there when the
correction comes. Two bodies' figures that a source sets side by side, each given to its
body, are two counts: the answer says "X and Y count differently", not "the sources
disagree", in either language, unless the model (where one is configured) finds otherwise.
Wool exports and glass output: fields no evaluation suite uses."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from redsearch.harness.recording import RecordingPublisher
from research_core.budget.owner import BudgetOwner
from research_core.loop.answering import builder
from research_core.loop.memory.evidence import Evidence, credibility
from research_core.loop.memory.node_conflicts import find_conflicts
from research_core.loop.memory.pool import Line
from research_core.loop.publishing.corrections import corrections
from research_core.loop.publishing.parts import Parts
from research_core.models.schemas import VerdictOut, VerdictsOut
from research_core.search.corpus import CorpusBackend, sample_corpus_dir
from research_core.settings import BudgetSettings
from research_core.store.sql import SqlStore
from research_core.text.counts import counted_apart, name_forms, short_name
from research_core.text.figures import figures_in
from tests.engine_run import Serve, default_similarity, run_engine

BOARD = "Norland Wool Board (NWB)"
CUSTOMS = "Norland Customs Office (NCO)"


def _line(n: int, source_id: str, text: str, published: str = "2026-10-20",
          publisher: str = BOARD, source_type: str = "official_statistics") -> Line:
    evidence = Evidence(f"E{n}", "N1", "Q1", source_id, f"{publisher} bulletin",
                        f"https://x.example/{source_id}", dt.date.fromisoformat(published),
                        source_type, publisher, text, 0.9, credibility(source_type), 1.0, 0.9,
                        "", True)
    return Line(text, evidence)


def _cite(e: Evidence) -> str:
    return f"[{e.source_id}]"


# two bodies, two counts of one quarter, and a note that sets them side by side
BOARD_Q3 = _line(1, "nwb-q3", "Norland wool exports reached 1,508 thousand bales in the third "
                 "quarter of 2026, the Norland Wool Board said.", "2026-10-09")
CUSTOMS_Q3 = _line(2, "nco-q3", "Norland wool exports reached 1,612 thousand bales in the "
                   "third quarter of 2026, customs records show.", "2026-10-16",
                   publisher=CUSTOMS)
NOTE = _line(3, "analyst-note", "The Norland Wool Board (NWB) reported 1,508 thousand bales, "
             "while the Norland Customs Office (NCO) reported 1,612 thousand bales for the "
             "third quarter of 2026.", "2026-10-22", publisher="Fellmark Research",
             source_type="research_report")


def test_a_sentence_that_gives_two_figures_to_two_bodies_counts_them_apart() -> None:
    assert name_forms(BOARD) == [BOARD, "Norland Wool Board", "NWB"]
    assert short_name(BOARD) == "NWB" and short_name("诺兰羊毛协会") == "诺兰羊毛协会"
    x, y = figures_in("1,508 thousand bales")[0], figures_in("1,612 thousand bales")[0]
    found = counted_apart(x, y, [BOARD_Q3, CUSTOMS_Q3, NOTE])
    assert found is not None and found.passage is NOTE and found.bodies == (BOARD, CUSTOMS)
    # one body's old and new figure is its revision, not two counts
    revision = _line(4, "nco-rev", "The Norland Customs Office (NCO) revised its 1,508 "
                     "thousand bales to 1,612 thousand bales.", publisher=CUSTOMS)
    assert counted_apart(x, y, [BOARD_Q3, CUSTOMS_Q3, revision]) is None


async def test_two_counts_are_said_to_count_differently_not_to_disagree() -> None:
    block = await builder.conflict_lines(default_similarity(), ["Norland wool exports Q3?"],
                                         [BOARD_Q3, CUSTOMS_Q3, NOTE], _cite, False)
    text = "\n".join(block)
    assert "• NWB and NCO count differently: NWB 1,508 thousand bales, NCO 1,612 thousand " \
           "bales [analyst-note]" in block, text
    assert "disagree" not in text


async def test_the_model_where_it_answers_decides_whether_they_count_differently() -> None:
    asked: list[tuple[str, str]] = []

    async def judge(claim: str, passage: str) -> bool | None:
        asked.append((claim, passage))
        return False  # the passage calls one figure an error

    block = await builder.conflict_lines(default_similarity(), ["Norland wool exports Q3?"],
                                         [BOARD_Q3, CUSTOMS_Q3, NOTE], _cite, False,
                                         judge=judge)
    assert asked and asked[0][1] == NOTE.text and "1,508" in asked[0][0]
    assert block[0] == "*Where the sources disagree*" and "count differently" not in block[1]


async def test_in_chinese_the_two_counts_are_said_in_chinese() -> None:
    board, stats = "诺兰羊毛协会", "诺兰统计局"
    lines = [_line(1, "zh-board", "2026年三季度诺兰羊毛出口150.8万包。", publisher=board),
             _line(2, "zh-stats", "2026年三季度诺兰羊毛出口161.2万包。", publisher=stats),
             _line(3, "zh-note", "2026年三季度，诺兰羊毛协会公布的羊毛出口为150.8万包，而诺兰统计局"
                   "公布为161.2万包，两者统计口径不同。", publisher="菲尔马克研究",
                   source_type="research_report")]
    block = await builder.conflict_lines(default_similarity(), ["诺兰羊毛出口？"], lines, _cite,
                                         True)
    text = "\n".join(block)
    assert "• 诺兰羊毛协会与诺兰统计局的统计口径不同：诺兰羊毛协会 150.8万包，" \
           "诺兰统计局 161.2万包 [zh-note]" in block, text
    assert "分歧" not in text


async def test_one_body_s_two_versions_still_disagree() -> None:
    first = _line(1, "release", "Norland's Q3 2026 wool exports were 1,508 thousand bales.")
    later = _line(2, "erratum", "Norland's Q3 2026 wool exports were 1,476 thousand bales.",
                  "2026-10-29")
    block = await builder.conflict_lines(default_similarity(), ["Norland wool exports?"],
                                         [first, later], _cite, False)
    assert block[0] == "*Where the sources disagree*" and "1,476" in block[1]


def test_the_progress_log_reports_no_conflict_between_two_counts() -> None:
    items = [ln.evidence for ln in (BOARD_Q3, CUSTOMS_Q3, NOTE)]
    assert find_conflicts(items) == []
    assert find_conflicts(items[:2]), "without the note they are a conflict"


# corrections: what re-values a published figure, and what does not
GLASS = _line(10, "guild-q3", "Brennmark's furnaces melted 18,400 tonnes of glass in the third "
              "quarter of 2026.", publisher="Brennmark Glass Guild")
PUBLISHED = f"• {GLASS.text} [guild-q3]"


def _later(n: int, text: str, publisher: str = "Brennmark Glass Guild") -> Line:
    return _line(n, f"later-{n}", text, "2026-10-30", publisher=publisher)


async def test_a_neighbouring_period_a_range_or_the_year_before_revises_nothing() -> None:
    sim = default_similarity()
    not_corrections = [
        _later(11, "Brennmark's furnaces melted 18,900 tonnes of glass in the fourth quarter "
                   "of 2026."),
        _later(12, "Brennmark's furnaces melted 17,100 tonnes of glass in the third quarter "
                   "of 2025, a year earlier."),
        _later(13, "Brennmark's furnaces melted 18,400 tonnes of glass in the third quarter of "
                   "2026, up from 17,100 tonnes a year earlier."),
    ]
    for later in not_corrections:
        assert await corrections(sim, [GLASS], [later], PUBLISHED) == [], later.text


async def test_a_revised_release_corrects_the_figure_the_part_states() -> None:
    revised = _later(14, "Brennmark's furnaces melted 17,900 tonnes of glass in the third "
                         "quarter of 2026, not 18,400 tonnes as first published.")
    found = await corrections(default_similarity(), [GLASS], [revised], PUBLISHED)
    assert [(c.later.source_id, c.old and c.old.text, c.new and c.new.text, c.period)
            for c in found] == [("later-14", "18,400", "17,900", "2026-Q3")]
    # a figure the part does not show is not what it corrects
    assert await corrections(default_similarity(), [GLASS], [revised], "• other [x]") == []


async def test_a_corrected_table_row_quoting_the_old_figure_beside_the_new_corrects_it() -> None:
    row = _later(15, "Brennmark's furnaces melted glass in the third quarter of 2026 (18,400 "
                     "tonnes, 17,900 tonnes).")
    found = await corrections(default_similarity(), [GLASS], [row], PUBLISHED)
    assert [c.new and c.new.text for c in found] == ["17,900"]
    other_body = _later(16, row.text, publisher="Ostmark Glass Review")
    assert await corrections(default_similarity(), [GLASS], [other_body], PUBLISHED) == []


async def test_another_body_s_count_set_beside_the_stated_one_is_no_correction() -> None:
    customs = _line(20, "nco-q3", CUSTOMS_Q3.text, "2026-10-30", publisher=CUSTOMS)
    published = f"• {BOARD_Q3.text} [nwb-q3]"
    sim = default_similarity()
    assert await corrections(sim, [BOARD_Q3], [customs], published), \
        "alone, a later figure of another body for the quarter reads as a correction"
    assert await corrections(sim, [BOARD_Q3], [customs], published, [NOTE]) == []


async def test_a_revision_leads_with_the_sentence_that_corrects_the_part() -> None:
    """A correcting line that a disagreement block also quotes is kept as the part's lead,
    not lost to the block that the part's budget cuts."""
    release = _line(30, "guild-q3", GLASS.text, "2026-10-20", publisher="Brennmark Glass Guild")
    erratum = _later(31, "Correction: Brennmark's furnaces melted 17,900 tonnes of glass in the "
                         "third quarter of 2026, revised from 18,400 tonnes first published.")
    section = builder.Section("How much glass did Brennmark melt in Q3 2026?",
                              [release.evidence, erratum.evidence])
    text = await builder.part(default_similarity(), section, _cite, [], budget=200,
                              leading=[erratum])
    bullets = [ln for ln in text.splitlines() if ln.startswith("•")]
    assert bullets and bullets[0].startswith(f"• {erratum.text}"), text


def test_new_figures_never_take_a_part_s_last_revision() -> None:
    owner = BudgetOwner.start(BudgetSettings(), "standard")
    parts: Any = SimpleNamespace(delivery=SimpleNamespace(owner=owner))
    unbudgeted: Any = SimpleNamespace(delivery=SimpleNamespace(owner=None))
    assert owner.revision_limits.per_part == 2
    assert Parts._spare(parts, "N1")
    assert owner.record_revision("N1")
    assert not Parts._spare(parts, "N1"), "the last revision stays for a correction"
    assert Parts._spare(unbudgeted, "N1")


async def test_the_sample_question_says_the_two_bodies_count_differently(
        serve: Serve, store: SqlStore, tmp_path: Path) -> None:
    """The README's question on the bundled corpus, every model reply unusable: the Q2
    note of two bodies' figures reads as two counts, and no part is revised, for no figure a
    part states is corrected by a later release in the corpus (its revised Q2 release is only
    announced)."""
    publisher = RecordingPublisher([])
    await run_engine(serve, lambda body: "", CorpusBackend.from_folder(sample_corpus_dir()),
                     store, "how did heat pump sales move in 2026?", publisher=publisher,
                     mode="standard", max_steps=8)
    texts = [v[-1].text for v in publisher.parts.values()]
    counted = [t for t in texts if "count differently:" in t]
    assert counted, texts
    assert not any("disagree" in t and "612,000" in t and "571,000" in t for t in texts), texts
    assert publisher.revisions == 0


async def test_a_part_asks_the_claim_check_once_per_claim() -> None:
    """Where a model is configured, the part's builder asks the claim check whether the
    passage bears out the two counts; the verdict is kept for the part's next build."""
    calls: list[str] = []

    class Gateway:
        async def try_structured(self, tier: str, purpose: str, messages: Any, model: Any,
                                 check: Any = None, max_tokens: int = 0) -> VerdictsOut:
            calls.append(purpose)
            return VerdictsOut(verdicts=[VerdictOut(index=0, supported=False)])

    parts: Any = SimpleNamespace(gateway=Gateway(), _verdicts={})
    claim = "NWB's figure and NCO's figure count different things."
    assert await Parts._judge(parts, claim, NOTE.text) is False
    assert await Parts._judge(parts, claim, NOTE.text) is False
    assert calls == ["check_claims"]
