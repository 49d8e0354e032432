"""Which network addresses the page reader may connect to, and a resolver that enforces it.

Only public unicast addresses pass, decided by the explicit lists below (IANA's IPv4 and IPv6
special-purpose registries, cloud metadata and host services, deprecated ranges), never by the
`ipaddress` module's is_private / is_global flags, whose answers differ between Python
releases. IPv6 must also be global unicast (2000::/3). An IPv4 address embedded in IPv6
(IPv4-mapped, 6to4, NAT64) is checked as IPv4.
`GuardedResolver` resolves a host, checks every address it got and hands aiohttp only those
checked addresses, so the connection goes to an address that was vetted (no DNS rebinding gap).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from aiohttp.abc import AbstractResolver, ResolveResult

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
# host, port -> the addresses the host resolves to (strings, as getaddrinfo gives them)
ResolveFn = Callable[[str, int], Awaitable[list[str]]]


def _nets(pairs: Iterable[tuple[str, str]]) -> tuple[tuple[IPNetwork, str], ...]:
    return tuple((ipaddress.ip_network(net), why) for net, why in pairs)


# Single addresses first, so that the most specific reason is given.
DENIED_V4 = _nets([
    ("169.254.169.254/32", "cloud metadata"), ("169.254.170.2/32", "cloud metadata"),
    ("100.100.100.200/32", "cloud metadata"), ("192.0.0.192/32", "cloud metadata"),
    ("168.63.129.16/32", "cloud host service"),
    ("0.0.0.0/8", "unspecified / this network"), ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "carrier-grade NAT"), ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"), ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "IETF protocol assignments"), ("192.0.2.0/24", "documentation"),
    ("192.31.196.0/24", "AS112"), ("192.52.193.0/24", "AMT"),
    ("192.88.99.0/24", "6to4 relay anycast"), ("192.168.0.0/16", "private"),
    ("192.175.48.0/24", "AS112"), ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"), ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"), ("240.0.0.0/4", "reserved"),
    ("255.255.255.255/32", "broadcast"),
])
DENIED_V6 = _nets([
    ("fd00:ec2::254/128", "cloud metadata"),
    ("::/128", "unspecified"), ("::1/128", "loopback"),
    ("64:ff9b:1::/48", "local-use NAT64"), ("100::/64", "discard-only"),
    ("2001::/23", "IETF protocol assignments"), ("2001:db8::/32", "documentation"),
    ("3fff::/20", "documentation"), ("5f00::/16", "segment routing"),
    ("fc00::/7", "unique local (private)"), ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local (deprecated)"), ("ff00::/8", "multicast"),
])
GLOBAL_UNICAST_V6 = ipaddress.ip_network("2000::/3")
IPV4_MAPPED = ipaddress.ip_network("::ffff:0:0/96")
NAT64 = ipaddress.ip_network("64:ff9b::/96")
SIX_TO_FOUR = ipaddress.ip_network("2002::/16")


class UnsafeAddress(Exception):
    """A host or address the page reader must not connect to."""


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address carried inside an IPv6 one that can reach it (IPv4-mapped and NAT64
    in the last 32 bits, 6to4 in bits 16-48). The deprecated IPv4-compatible (::/96) and
    translated (::ffff:0:0:0/96) forms are outside 2000::/3 and refused as such."""
    value = int(ip)
    if ip in IPV4_MAPPED or ip in NAT64:
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if ip in SIX_TO_FOUR:
        return ipaddress.IPv4Address((value >> 80) & 0xFFFFFFFF)
    return None


def address_problem(ip: IPAddress) -> str | None:
    """Why an address is refused, or None for a public unicast address."""
    if isinstance(ip, ipaddress.IPv4Address):
        return next((why for net, why in DENIED_V4 if ip in net), None)
    if ip.scope_id:
        return "scoped IPv6 address"
    plain = ipaddress.IPv6Address(int(ip))
    inner = embedded_ipv4(plain)
    if inner is not None:
        problem = address_problem(inner)
        return f"embeds {inner}: {problem}" if problem else None
    denied = next((why for net, why in DENIED_V6 if plain in net), None)
    if denied is None and plain not in GLOBAL_UNICAST_V6:
        denied = "not global unicast"
    return denied


def parse_ip(host: str) -> IPAddress | None:
    """The address of an IP literal host (brackets allowed), else None."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


@dataclass(frozen=True)
class AddressPolicy:
    """Public addresses only; `allow` lists networks let through anyway (tests' local servers)."""

    allow: tuple[IPNetwork, ...] = ()

    @classmethod
    def allowing(cls, networks: Iterable[str]) -> AddressPolicy:
        return cls(tuple(ipaddress.ip_network(n) for n in networks))

    def check(self, ip: IPAddress, host: str) -> None:
        if any(ip.version == net.version and ip in net for net in self.allow):
            return
        problem = address_problem(ip)
        if problem:
            raise UnsafeAddress(f"{host} → {ip}: {problem} address refused")


async def system_resolve(host: str, port: int) -> list[str]:
    """The event loop's getaddrinfo (TCP), every address it returns."""
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return [str(info[4][0]) for info in infos]


@dataclass
class GuardedResolver(AbstractResolver):
    """Resolves, refuses the host if ANY of its addresses is unsafe, returns the vetted ones."""

    policy: AddressPolicy
    resolve_fn: ResolveFn = system_resolve
    seen: list[str] = field(default_factory=list)

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        literal = parse_ip(host)
        found = [str(literal)] if literal else await self.resolve_fn(host, port)
        if not found:
            raise UnsafeAddress(f"{host} does not resolve")
        addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in found]
        for ip in addresses:
            self.policy.check(ip, host)
        self.seen.extend(str(ip) for ip in addresses)
        return [self._result(host, ip, port) for ip in dict.fromkeys(addresses)]

    @staticmethod
    def _result(host: str, ip: IPAddress, port: int) -> ResolveResult:
        family = socket.AF_INET if ip.version == 4 else socket.AF_INET6
        return ResolveResult(hostname=host, host=str(ip), port=port, family=family,
                             proto=socket.IPPROTO_TCP, flags=socket.AI_NUMERICHOST)

    async def close(self) -> None:
        return None
