"""Which network addresses the page reader may connect to, and a resolver that enforces it.

Only public unicast addresses pass. Loopback, private, link-local, carrier-grade NAT,
multicast, reserved, unspecified and cloud-metadata addresses are refused, for IPv4 and IPv6,
and an IPv4 address embedded in IPv6 (IPv4-mapped, 6to4, Teredo, NAT64) is checked as IPv4.
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

CGNAT = ipaddress.ip_network("100.64.0.0/10")
NAT64 = ipaddress.ip_network("64:ff9b::/96")
METADATA = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254"))


class UnsafeAddress(Exception):
    """A host or address the page reader must not connect to."""


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address carried inside an IPv6 one (mapped, 6to4, Teredo client, NAT64)."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def address_problem(ip: IPAddress) -> str | None:
    """Why an address is refused, or None for a public unicast address."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = embedded_ipv4(ip)
        if inner is not None:
            problem = address_problem(inner)
            return f"embeds {inner}: {problem}" if problem else None
        if ip.scope_id:
            return "scoped IPv6 address"
    checks = (
        (ip in METADATA, "cloud metadata"),
        (ip.is_loopback, "loopback"),
        (ip.is_unspecified, "unspecified"),
        (ip.is_link_local, "link-local"),
        (ip.is_multicast, "multicast"),
        (isinstance(ip, ipaddress.IPv4Address) and ip in CGNAT, "carrier-grade NAT"),
        (ip.is_private, "private"),
        (ip.is_reserved, "reserved"),
        (not ip.is_global, "not globally routable"),
    )
    return next((why for bad, why in checks if bad), None)


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
