"""What the bot says to people, in the asker's language (issue 44, item 3).

Every string a person reads in a thread, on the Home tab or in a modal is an English message id
looked up in a gettext catalogue (`zh_Hans.po`, read with Babel, the ecosystem's catalogue
library): `Words("zh")("Research finished")` is "研究完成". Placeholders are Python format
fields (`{n}`), kept by the translation; a count picks the form that agrees with it
(`Words.count`). The thread follows the question's language (`for_question`: Chinese when it is
written in Chinese, else English); a message with no translation falls back to English.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po

from research_core.text.asking import read_question

ENGLISH = "en"
CHINESE = "zh"
CATALOGUES = {CHINESE: "zh_Hans.po"}


@cache
def catalogue(language: str) -> Catalog | None:
    """The language's catalogue, read once; None for English (the message ids)."""
    name = CATALOGUES.get(language)
    if name is None:
        return None
    with resources.files(__package__).joinpath(name).open("rb") as po:
        return read_po(po, locale="zh_Hans_CN")


class Words:
    """The messages of one language."""

    def __init__(self, language: str = ENGLISH) -> None:
        self.language = language if language in CATALOGUES else ENGLISH
        self._catalogue = catalogue(self.language)

    def __call__(self, message: str, **fields: object) -> str:
        """`message` in this language, its `{fields}` filled in."""
        found = self._catalogue.get(message) if self._catalogue else None
        said = found.string if found is not None and found.string else message
        return str(said).format(**fields) if fields else str(said)

    def count(self, n: int, one: str, many: str, **fields: object) -> str:
        """The form of a message that agrees with `n` (Chinese has one), `{n}` filled in."""
        found = self._catalogue.get((one, many)) if self._catalogue else None
        forms = found.string if found is not None else None
        if isinstance(forms, tuple) and forms and forms[0]:
            return str(forms[0]).format(n=n, **fields)
        return (one if n == 1 else many).format(n=n, **fields)


def for_question(question: str) -> Words:
    """The words of the thread a question starts: its own language."""
    return Words(CHINESE if read_question(question).chinese else ENGLISH)


ENGLISH_WORDS = Words()


def N_(message: str) -> str:
    """A message id kept in a constant and translated where it is shown (`Words`)."""
    return message
