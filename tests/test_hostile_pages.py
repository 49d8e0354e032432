"""Hostile pages against the real page reader and a local server: each is read or refused
(`PageRefused`), never raises anything else, stays within the page's time cap however slow its
parser, keeps the event loop responsive meanwhile, and never yields a NUL character. The
address policy is checked against an explicit table that does not depend on the Python
version's `ipaddress` flags."""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import time
from collections.abc import AsyncIterator

import pytest

from research_core.protocols import SearchHit
from research_core.search.web.chain import WebBackend
from research_core.search.web.extract import FetchedPage
from research_core.search.web.extract_process import HelperPool, extract_in_process
from research_core.search.web.hits import source_id_for
from research_core.search.web.net_guard import AddressPolicy, address_problem
from research_core.search.web.page_reader import PageReader, PageRefused
from tests.fakes.hostile_web import PARAGRAPH, HostileWeb, slow_pdf

PAGE_HOST = "127.0.0.2"
CAP_S = 1.5


@pytest.fixture
async def hostile() -> AsyncIterator[HostileWeb]:
    server = HostileWeb(host=PAGE_HOST)
    await server.start()
    yield server
    await server.stop()


def reader(timeout_s: float = 5.0) -> PageReader:
    return PageReader(policy=AddressPolicy.allowing([f"{PAGE_HOST}/32"]), max_bytes=1_000_000,
                      timeout_s=timeout_s)


@pytest.mark.parametrize("charset", ["x-no-such", "rot13", "base64", "idna", "uu", "utf-8"])
async def test_an_unknown_or_non_text_charset_falls_back_to_utf8(hostile: HostileWeb,
                                                                 charset: str) -> None:
    page = await reader().read(hostile.url(f"/charset/{charset}"))
    assert "214,000 units" in page.text
    plain = await reader().read(hostile.url(f"/text-charset/{charset}"))
    assert plain.text == PARAGRAPH


async def test_a_pdf_with_a_malformed_creation_date_is_read_undated(hostile: HostileWeb) -> None:
    page = await reader().read(hostile.url("/pdf/bad-date"))
    assert "214,000 units" in page.text
    assert page.published is None


async def test_no_nul_character_survives_extraction(hostile: HostileWeb) -> None:
    page = await reader().read(hostile.url("/pdf/nul"))
    assert "Heat" in page.text and "\x00" not in page.text


async def test_a_nul_byte_past_the_first_chunk_is_binary(hostile: HostileWeb) -> None:
    with pytest.raises(PageRefused, match="binary"):
        await reader().read(hostile.url("/late-nul"))


@pytest.mark.parametrize("path", ["/pdf/garbage", "/deep-html", "/gzip-bomb"])
async def test_pages_that_break_parsers_are_read_or_refused(hostile: HostileWeb,
                                                           path: str) -> None:
    started = time.monotonic()
    try:
        page = await reader().read(hostile.url(path))
    except PageRefused:
        pass
    else:
        assert "\x00" not in page.text
    assert time.monotonic() - started < 5.0 + 1.0


async def test_a_slow_pdf_is_stopped_at_the_page_cap_and_the_loop_keeps_beating(
        hostile: HostileWeb) -> None:
    await reader().read(hostile.url("/fine"))  # a helper is running: its start is not timed
    gaps: list[float] = []

    async def heartbeat() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.02)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    beating = asyncio.create_task(heartbeat())
    started = time.monotonic()
    with pytest.raises(PageRefused, match="took longer than"):
        await reader(timeout_s=CAP_S).read(hostile.url("/pdf/slow"))
    took = time.monotonic() - started
    beating.cancel()
    assert took < CAP_S + 1.0, f"the {CAP_S}s cap took {took:.1f}s"
    assert max(gaps) < 0.5, f"the event loop stalled for {max(gaps):.2f}s"
    page = await reader().read(hostile.url("/fine"))  # the killed helper was replaced
    assert "214,000 units" in page.text


async def test_cancelling_a_read_stops_its_extraction_at_once() -> None:
    pool = HelperPool(size=1)
    body = slow_pdf()
    slow = FetchedPage("http://slow.example/x.pdf", "application/pdf", None, body, False,
                       len(body))
    html = b"<html><body><article><p>" + PARAGRAPH.encode() + b"</p></article></body></html>"
    fine = FetchedPage("http://fine.example/", "text/html", "utf-8", html, False, len(html))
    try:
        await extract_in_process(fine, 30.0, pool)  # started and warm
        task = asyncio.create_task(extract_in_process(slow, 30.0, pool))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        started = time.monotonic()  # the only slot is free again once the helper is killed
        page = await extract_in_process(fine, 30.0, pool)
        assert "214,000 units" in page.text
        assert time.monotonic() - started < 3.0
    finally:
        pool.close()


async def test_a_hostile_page_costs_the_page_not_the_run(hostile: HostileWeb) -> None:
    """The backend the engine reads bodies through answers None for every hostile page."""
    backend = WebBackend([], reader(timeout_s=CAP_S))
    paths = ["/charset/rot13", "/pdf/bad-date", "/pdf/slow", "/pdf/garbage", "/late-nul"]
    hits = [SearchHit(source_id_for(hostile.url(p)), "t", "s", hostile.url(p),
                      dt.date(2026, 10, 1), "news") for p in paths]
    backend.remember(hits)
    bodies = {p: await backend.read_body(h.source_id) for p, h in zip(paths, hits, strict=True)}
    assert "214,000 units" in (bodies["/charset/rot13"] or "")
    assert "214,000 units" in (bodies["/pdf/bad-date"] or "")
    assert bodies["/pdf/slow"] is None and bodies["/pdf/garbage"] is None
    assert bodies["/late-nul"] is None


DENIED = [
    "192.0.0.192", "168.63.129.16", "169.254.169.254", "100.100.100.200", "169.254.170.2",
    "127.0.0.1", "127.255.255.254", "10.1.2.3", "172.31.0.1", "192.168.0.1", "100.64.0.1",
    "0.0.0.0", "0.1.2.3", "192.0.2.1", "198.51.100.1", "203.0.113.1", "198.18.0.1",
    "192.88.99.1", "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
    "::", "::1", "fec0::1", "fe80::1", "febf::1", "fc00::1", "fd00:ec2::254", "ff02::1",
    "2001:db8::1", "2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "100::1", "3fff::1",
    "5f00::1", "64:ff9b:1::1", "::ffff:127.0.0.1", "::ffff:192.0.0.192",
    "::ffff:168.63.129.16", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1", "2002:c000:00c0::",
    "::127.0.0.1", "::8.8.8.8", "::ffff:0:8.8.8.8", "4000::1", "fe80::1%1",
]
ALLOWED = ["8.8.8.8", "93.184.216.34", "1.1.1.1", "2606:4700:4700::1111",
           "2a00:1450:4001:80b::200e", "::ffff:8.8.8.8", "64:ff9b::808:808",
           "2002:0808:0808::1", "192.0.1.1", "168.63.129.17"]


@pytest.mark.parametrize("address", DENIED)
def test_the_deny_list_refuses(address: str) -> None:
    assert address_problem(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", ALLOWED)
def test_public_unicast_passes(address: str) -> None:
    assert address_problem(ipaddress.ip_address(address)) is None


def _lying_flag(answer: bool) -> property:
    def flag(self: object) -> bool:
        return answer

    return property(flag)


def test_the_policy_does_not_depend_on_the_ipaddress_flags(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Python patch releases change is_private / is_global; the policy must not move, even
    when every flag says "public" (is_global true, every other flag false)."""
    before = {a: address_problem(ipaddress.ip_address(a)) for a in DENIED + ALLOWED}
    for cls in (ipaddress.IPv4Address, ipaddress.IPv6Address):
        for flag in ("is_private", "is_global", "is_reserved", "is_link_local",
                     "is_loopback", "is_multicast", "is_unspecified", "is_site_local"):
            if hasattr(cls, flag):
                monkeypatch.setattr(cls, flag, _lying_flag(flag == "is_global"))
    after = {a: address_problem(ipaddress.ip_address(a)) for a in DENIED + ALLOWED}
    assert after == before


@pytest.mark.parametrize("url", ["http://192.0.0.192/opc/v2/instance/",
                                 "http://168.63.129.16/machine?comp=goalstate",
                                 "http://[fec0::1]/", "http://[::ffff:c000:c0]/"])
async def test_metadata_and_host_service_addresses_are_refused_unconnected(url: str) -> None:
    started = time.monotonic()
    with pytest.raises(PageRefused, match="refused"):
        await PageReader().read(url)
    assert time.monotonic() - started < 1.0


async def test_a_name_resolving_to_a_metadata_address_is_refused() -> None:
    async def resolve(host: str, port: int) -> list[str]:
        return ["93.184.216.34", "168.63.129.16"]

    with pytest.raises(PageRefused, match="cloud host service"):
        await PageReader(resolve_fn=resolve).read("http://innocent.example/")
