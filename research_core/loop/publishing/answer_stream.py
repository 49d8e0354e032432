"""A follow-up's answer shown while the model writes it: the model writes JSON
(`{"answer": "…", "sufficient": true}`), and only the `answer` string, decoded as it arrives,
goes to the part's stream. An answer the model itself calls insufficient is discarded from the
stream when the model stops (the follow-up is then researched and answered again)."""

from __future__ import annotations

import re

from research_core.protocols import PartStream

_ANSWER_START = re.compile(r'"answer"\s*:\s*"')
_INSUFFICIENT = re.compile(r'"sufficient"\s*:\s*false')
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "\\": "\\",
            "/": "/"}
REPLACEMENT = "\ufffd"


class JsonStringReader:
    """Decodes one JSON string value, piece by piece, from the opening quote on."""

    def __init__(self) -> None:
        self.closed = False
        self._escape: str | None = None  # "\\" after a backslash, "\\uXXX" while reading hex
        self._high: int | None = None  # a high surrogate waiting for its low half

    def feed(self, piece: str) -> str:
        out: list[str] = []
        for char in piece:
            if self.closed:
                break
            out.append(self._char(char))
        return "".join(out)

    def _char(self, char: str) -> str:
        if self._escape is not None:
            return self._escaped(char)
        if char == "\\":
            self._escape = "\\"
            return ""
        if char == '"':
            self.closed = True
            return self._flush_high()
        return self._flush_high() + char

    def _escaped(self, char: str) -> str:
        assert self._escape is not None
        if self._escape == "\\" and char != "u":
            self._escape = None
            return self._flush_high() + _ESCAPES.get(char, char)
        self._escape += char
        if len(self._escape) < 6:  # \uXXXX
            return ""
        code, self._escape = self._escape[2:], None
        try:
            return self._code_point(int(code, 16))
        except ValueError:
            return self._flush_high() + REPLACEMENT

    def _code_point(self, value: int) -> str:
        if 0xD800 <= value <= 0xDBFF:
            flushed = self._flush_high()
            self._high = value
            return flushed
        if 0xDC00 <= value <= 0xDFFF:
            if self._high is None:
                return REPLACEMENT
            high, self._high = self._high, None
            return chr(0x10000 + ((high - 0xD800) << 10) + (value - 0xDC00))
        return self._flush_high() + chr(value)

    def _flush_high(self) -> str:
        if self._high is None:
            return ""
        self._high = None
        return REPLACEMENT


class AnswerStream:
    """A `PartStream` for the JSON a follow-up's model writes: passes on its `answer`."""

    def __init__(self, inner: PartStream) -> None:
        self.inner = inner
        self._raw = ""
        self._reader: JsonStringReader | None = None

    async def write(self, text: str) -> None:
        self._raw += text
        if self._reader is None:
            found = _ANSWER_START.search(self._raw)
            if found is None:
                return
            self._reader = JsonStringReader()
            text = self._raw[found.end():]
        shown = self._reader.feed(text)
        if shown:
            await self.inner.write(shown)

    async def end(self) -> None:
        await self.inner.end()
        if _INSUFFICIENT.search(self._raw):
            await self.discard()

    async def discard(self) -> None:
        self._raw, self._reader = "", None
        await self.inner.discard()
