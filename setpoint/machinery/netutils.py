"""k8s.io/utils/net's IP parsing, which kube-apiserver's validation and kube-controller-manager's
controllers share: Go 1.16's ``net.ParseIP`` kept as ``ParseIPSloppy`` (an IPv4 address's parts
may carry leading zeros, read as decimal; no IPv6 zone), and Go's ``ip.To4() != nil`` family
test (an IPv4-mapped IPv6 address counts as IPv4)."""

from __future__ import annotations

import ipaddress
from typing import Any

IP = ipaddress.IPv4Address | ipaddress.IPv6Address


def parse_ip_sloppy(value: Any) -> IP | None:
    """``netutils.ParseIPSloppy``: an IP, an IPv4 address's parts allowed leading zeros; None
    for what Go rejects (a zone such as ``fe80::1%eth0`` among it, which Python accepts)."""
    if not isinstance(value, str) or "%" in value:
        return None
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        parts = value.split(".")
        if len(parts) == 4 and all(p.isascii() and p.isdigit() and int(p) < 256
                                   for p in parts):
            return ipaddress.IPv4Address(".".join(str(int(p)) for p in parts))
        return None


def is_ipv4(ip: IP) -> bool:
    """Go's ``ip.To4() != nil``: an IPv4 address, or an IPv6 one mapping one
    (``::ffff:a.b.c.d``)."""
    return ip.version == 4 or (isinstance(ip, ipaddress.IPv6Address)
                               and ip.ipv4_mapped is not None)


__all__ = ["IP", "is_ipv4", "parse_ip_sloppy"]
