"""The page reader against local servers: address policy on every hop, caps, content types."""

from __future__ import annotations

import datetime as dt
import ipaddress
import time
from collections.abc import AsyncIterator

import pytest

from research_core.search.web.net_guard import AddressPolicy, address_problem
from research_core.search.web.page_reader import CHUNK_BYTES, PageReader, PageRefused
from tests.fakes.web_server import BIG_PAGE_BYTES, PDF_LINES, Doc, FakeWeb, article

# The pages are served from 127.0.0.2; only that address is let through, so 127.0.0.1 (and
# every other loopback address) stays refused in the same tests.
PAGE_HOST = "127.0.0.2"
LOCAL_ONLY = AddressPolicy.allowing([f"{PAGE_HOST}/32"])


@pytest.fixture
async def site() -> AsyncIterator[FakeWeb]:
    server = FakeWeb(host=PAGE_HOST, docs=[Doc(
        "sales", "Heat pump sales rise", "Sales rose.", "2026-10-12",
        article("Heat pump sales rise", "2026-10-12", [
            "Heat pump sales reached 214,000 units in September 2026, up 12.4% on the year.",
            "Prices fell 9.5% to 7,150 euros in October 2026 as competition increased."]))])
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def loopback() -> AsyncIterator[FakeWeb]:
    """A server on 127.0.0.1 that must never be reached."""
    server = FakeWeb(host="127.0.0.1", docs=[Doc("secret", "t", "s", "2026-01-01",
                                                 article("secret", "2026-01-01", ["x"]))])
    await server.start()
    yield server
    await server.stop()


def reader(**kwargs: object) -> PageReader:
    return PageReader(**{"policy": LOCAL_ONLY, "max_bytes": 1_000_000, "timeout_s": 5.0,
                         **kwargs})  # type: ignore[arg-type]


@pytest.mark.parametrize("address", [
    "127.0.0.1", "10.0.0.5", "172.16.3.4", "192.168.1.1", "169.254.169.254", "100.64.1.1",
    "224.0.0.1", "240.0.0.1", "0.0.0.0", "255.255.255.255", "::1", "::", "fe80::1",
    "fc00::1", "fd00:ec2::254", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
    "2002:7f00:1::", "64:ff9b::a00:5", "2001:db8::1", "198.18.0.1",
])
def test_unsafe_addresses_are_refused(address: str) -> None:
    assert address_problem(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111",
                                     "::ffff:8.8.8.8", "64:ff9b::808:808"])
def test_public_addresses_pass(address: str) -> None:
    assert address_problem(ipaddress.ip_address(address)) is None


async def test_a_page_is_read_with_its_main_text_and_date(site: FakeWeb) -> None:
    page = await reader().read(site.url("/pages/sales"))
    assert "214,000 units" in page.text and "7,150 euros" in page.text
    assert "Home | Markets" not in page.text
    assert page.published == dt.date(2026, 10, 12)
    assert "\n\n" in page.text  # paragraphs separated for the engine's paragraph selection


async def test_plain_text_is_read(site: FakeWeb) -> None:
    page = await reader().read(site.url("/plain"))
    assert page.text == "First line of text.\n\nSecond line."


async def test_the_default_policy_refuses_the_local_server(site: FakeWeb) -> None:
    with pytest.raises(PageRefused, match="loopback"):
        await PageReader().read(site.url("/pages/sales"))
    assert site.seen == []


async def test_redirect_to_127_0_0_1_is_refused(site: FakeWeb, loopback: FakeWeb) -> None:
    target = loopback.url("/pages/secret")
    with pytest.raises(PageRefused, match="loopback"):
        await reader().read(site.url(f"/redirect/2?to={target}"))
    assert loopback.seen == []


async def test_a_hostname_resolving_to_10_x_is_refused(site: FakeWeb) -> None:
    asked: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["10.0.0.5"] if host == "intranet.example" else ["93.184.216.34", "10.0.0.6"]

    with pytest.raises(PageRefused, match="private"):
        await reader(resolve_fn=resolve).read("http://intranet.example/report")
    with pytest.raises(PageRefused, match="private"):  # one bad address of several is enough
        await reader(resolve_fn=resolve).read("http://mixed.example/report")
    # a redirect hop to such a host is checked the same way
    with pytest.raises(PageRefused, match=r"10\.0\.0\.5"):
        await reader(resolve_fn=resolve).read(
            site.url("/redirect/1?to=http://intranet.example/x"))
    assert asked == ["intranet.example", "mixed.example", "intranet.example"]


async def test_a_resolved_address_is_the_one_connected_to(site: FakeWeb) -> None:
    port = site.base_url.rsplit(":", 1)[1]

    async def resolve(host: str, port_: int) -> list[str]:
        return [PAGE_HOST]

    page = await reader(resolve_fn=resolve).read(f"http://news.example:{port}/pages/sales")
    assert "214,000 units" in page.text  # news.example was connected to at 127.0.0.2


@pytest.mark.parametrize("url", [
    "http://[::ffff:127.0.0.1]/", "http://[::1]:8080/", "http://169.254.169.254/latest/",
    "http://[fd00:ec2::254]/", "http://0.0.0.0/", "http://100.64.0.1/",
])
async def test_ip_literals_are_refused(url: str) -> None:
    started = time.monotonic()
    with pytest.raises(PageRefused, match="refused"):
        await PageReader().read(url)
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "gopher://x/"])
async def test_only_http_and_https_are_read(url: str) -> None:
    with pytest.raises(PageRefused, match="only http"):
        await PageReader().read(url)


async def test_more_than_five_redirects_are_refused(site: FakeWeb) -> None:
    target = site.url("/pages/sales")
    page = await reader().read(site.url(f"/redirect/5?to={target}"))
    assert "214,000 units" in page.text
    with pytest.raises(PageRefused, match="more than 5 redirects"):
        await reader().read(site.url(f"/redirect/6?to={target}"))


async def test_a_50_mb_page_is_cut_at_the_cap(site: FakeWeb) -> None:
    cap = 1_000_000
    started = time.monotonic()
    page = await reader(max_bytes=cap).fetch(site.url("/big"))
    assert page.truncated and len(page.body) == cap
    assert page.received <= cap + CHUNK_BYTES
    assert time.monotonic() - started < 5.0
    assert site.big_sent < BIG_PAGE_BYTES


async def test_binary_content_is_refused(site: FakeWeb) -> None:
    with pytest.raises(PageRefused, match="application/octet-stream"):
        await reader().read(site.url("/binary"))
    with pytest.raises(PageRefused, match="binary"):
        await reader().read(site.url("/nul"))


async def test_a_slow_page_is_cut_at_the_time_cap(site: FakeWeb) -> None:
    started = time.monotonic()
    with pytest.raises(PageRefused, match=r"within 0\.5s"):
        await reader(timeout_s=0.5).read(site.url("/slow"))
    assert time.monotonic() - started < 2.0


async def test_localhost_by_name_is_refused() -> None:
    with pytest.raises(PageRefused, match="loopback"):
        await PageReader().read("http://localhost:9/")


async def test_a_pdf_is_read_with_its_text_and_date(site: FakeWeb) -> None:
    page = await reader().read(site.url("/pdf"))
    assert page.text == "\n\n".join(PDF_LINES)
    assert page.published == dt.date(2026, 10, 12) and page.title == "Heat pump report"


async def test_a_pdf_cut_at_the_cap_is_refused(site: FakeWeb) -> None:
    with pytest.raises(PageRefused, match="PDF cut at the byte cap"):
        await reader(max_bytes=300).read(site.url("/pdf"))
