"""Reading a Prometheus endpoint the way Prometheus does: GET /metrics, parsed with
prometheus_client's own parser of the text format."""

from __future__ import annotations

import aiohttp
from prometheus_client.parser import text_string_to_metric_families


class Scrape:
    """One scrape: every sample by name and labels."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.samples = [s for family in text_string_to_metric_families(text)
                        for s in family.samples]

    def value(self, name: str, **labels: str) -> float:
        """The sum of the samples called `name` whose labels include `labels` (0 if none)."""
        return sum(s.value for s in self.samples
                   if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))

    def names(self) -> set[str]:
        return {s.name for s in self.samples}


async def scrape(session: aiohttp.ClientSession, url: str) -> Scrape:
    async with session.get(url) as resp:
        assert resp.status == 200, f"{url}: HTTP {resp.status}"
        assert resp.content_type == "text/plain"
        return Scrape(await resp.text())
