"""Standard with steps left re-searches the figures its parts state (issue 25): a correction
published after the first part is read, and the part it corrects is revised in place. Every
model reply is unusable, so this is the path a newcomer on the bundled model gets. Beekeeping,
a field no evaluation suite uses."""

from __future__ import annotations

from pathlib import Path

from redsearch.harness.recording import RecordingPublisher
from research_core.search.corpus import CorpusBackend
from research_core.store.sql import SqlStore
from tests.conftest import write_doc
from tests.engine_run import Outcome, Serve, run_engine

QUESTION = "How many hives did Vestland count at the end of the third quarter of 2026?"
DOCS = {
    "apiary-census-q3": ("official_statistics", "en", "2026-10-15",
                         "Vestland hive census, third quarter 2026",
                         "Vestland counted 41,200 hives at the end of the third quarter of 2026, "
                         "up 3.1% on the year.\n\nHoney yields per hive were 18 kg."),
    "norland-hives": ("official_statistics", "en", "2026-10-12", "Norland apiary statistics",
                      "Norland counted 55,000 hives in September 2026."),
    "blog-honey": ("blog", "en", "2026-09-01", "Ten honey facts",
                   "Honey never spoils, and a hive can hold 60,000 bees."),
}
ERRATUM = ("official_statistics", "en", "2026-10-28", "Erratum to the Vestland hive census",
           "Correction: the Vestland hive census for the third quarter of 2026 is revised. "
           "Vestland counted 40,900 hives at the end of the third quarter of 2026, not 41,200 "
           "as first published.")


Doc = tuple[str, str, str, str, str]  # source type, language, published, title, body


def _corpus(folder: Path, docs: dict[str, Doc]) -> Path:
    folder.mkdir()
    for doc_id, spec in docs.items():
        write_doc(folder, doc_id, spec)
    return folder


async def _with_late_notice(serve: Serve, store: SqlStore, folder: Path, question: str,
                            docs: dict[str, Doc], late: dict[str, Doc]
                            ) -> tuple[Outcome, RecordingPublisher]:
    """A standard run of 8 steps, every model reply unusable, whose `late` documents become
    searchable once its first part is out."""
    backend = CorpusBackend.from_folder(_corpus(folder / "corpus", docs))
    later = _corpus(folder / "late", late)

    async def arrive() -> None:
        backend.add_folder(later)

    publisher = RecordingPublisher([], on_first_part=arrive)
    out = await run_engine(serve, lambda body: "", backend, store, question,
                           publisher=publisher, mode="standard", max_steps=8)
    return out, publisher


async def test_a_correction_published_after_the_first_part_revises_it(
        serve: Serve, store: SqlStore, tmp_path: Path) -> None:
    out, publisher = await _with_late_notice(serve, store, tmp_path, QUESTION, DOCS,
                                             {"apiary-census-erratum": ERRATUM})
    rechecks = [e for e in out.state.log.events if e.kind == "recheck"]
    assert rechecks, "standard ended without re-searching the figures its parts state"
    revised = [v for versions in publisher.parts.values() for v in versions[1:]
               if "apiary-census-erratum" in v.text]
    assert revised and "40,900" in revised[-1].text
    # the recheck keeps the erratum for the part's own sub-question, and it is still news
    # to that part: read as the correction it is, not as one more source with new figures
    assert revised[-1].reason == "corrected by apiary-census-erratum"
    assert out.state.step <= 8



QUESTION_ZH = "东湖2026年三季度末的蜂箱数量是多少？"
DOCS_ZH = {
    "hive-census-q3": ("official_statistics", "zh", "2026-10-15", "东湖蜂箱普查（2026年三季度）",
                       "2026年三季度末，东湖蜂箱数量为4.12万箱，同比增长3.1%。\n\n每箱蜂蜜产量为18公斤。"),
    "news-hives": ("news", "zh", "2026-10-18", "东湖蜂业快讯",
                   "据东湖统计局普查，2026年三季度末东湖蜂箱数量为4.12万箱，创历史新高。"),
    "blog-honey": ("blog", "zh", "2026-09-01", "蜂蜜小知识",
                   "蜂蜜不会变质，一个蜂箱可容纳6万只蜜蜂。"),
}
ERRATUM_ZH = ("official_statistics", "zh", "2026-10-28", "关于东湖蜂箱普查数据的更正",
              "经复核，2026年三季度末东湖蜂箱数量由原公布的4.12万箱更正为4.09万箱。")


async def test_a_notice_naming_the_old_figure_revises_the_part_it_corrects(
        serve: Serve, store: SqlStore, tmp_path: Path) -> None:
    """The erratum states the old figure and the new one in one sentence: the part that
    stated the old one is revised, and the revision states the new one citing the erratum.
    (Restating the old lines with the new figure, and leading with the correcting line, were
    deleted in issue 42: switched off, they changed no group on suites written after them.)"""
    out, publisher = await _with_late_notice(serve, store, tmp_path, QUESTION_ZH, DOCS_ZH,
                                             {"hive-erratum": ERRATUM_ZH})
    revised = [v for versions in publisher.parts.values() for v in versions[1:]
               if v.reason == "corrected by hive-erratum"]
    assert revised, [e.message for e in out.state.log.events if e.kind == "publish"]
    bullets = [ln for ln in revised[-1].text.splitlines() if ln.startswith("•")]
    assert any("4.09万箱" in b and "hive-erratum" in b for b in bullets), bullets
