"""Go's ``net/netip`` parsers (Go 1.23) for the CEL IP and CIDR libraries, with their errors.

The apiserver's library (pkg/cel/library/ip.go ``parseIPAddr``, cidr.go ``parseCIDR``)
quotes netip's error inside its own, so a rule's runtime error carries netip's words:
``ParseAddr("1.2.3"): IPv4 address too short``, ``netip.ParsePrefix("10.0.0.0/33"): prefix
length out of range``. ``parse_addr`` and ``parse_prefix`` follow netip.go's ``ParseAddr``,
``parseIPv4``, ``parseIPv6`` and ``ParsePrefix`` check for check, in their order.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from setpoint.machinery.gofmt import go_quote

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class ParsedAddr:
    """An address netip took: the address, and its IPv6 zone ("" for none)."""

    address: Address
    zone: str = ""


class NetipError(ValueError):
    """netip's parseAddrError or parsePrefixError; ``str`` is its Error()."""


def _addr_error(text: str, message: str, at: str = "") -> NetipError:
    where = f" (at {go_quote(at)})" if at else ""
    return NetipError(f"ParseAddr({go_quote(text)}): {message}{where}")


def parse_addr(text: str) -> ParsedAddr:
    """netip.ParseAddr; NetipError worded as Go's."""
    for character in text:
        if character == ".":
            return ParsedAddr(ipaddress.IPv4Address(bytes(_ipv4(text))))
        if character == ":":
            return _ipv6(text)
        if character == "%":
            raise _addr_error(text, "missing IPv6 address")
    raise _addr_error(text, "unable to parse IP")


def _ipv4(text: str) -> list[int]:
    """parseIPv4: four decimal fields without leading zeros."""
    fields: list[int] = []
    value, digits = 0, 0
    for i, character in enumerate(text):
        if "0" <= character <= "9":
            if digits == 1 and value == 0:
                raise _addr_error(text, "IPv4 field has octet with leading zero")
            value = value * 10 + ord(character) - ord("0")
            digits += 1
            if value > 255:
                raise _addr_error(text, "IPv4 field has value >255")
        elif character == ".":
            if i == 0 or i == len(text) - 1 or text[i - 1] == ".":
                raise _addr_error(text, "IPv4 field must have at least one digit", text[i:])
            if len(fields) == 3:
                raise _addr_error(text, "IPv4 address too long")
            fields.append(value)
            value, digits = 0, 0
        else:
            raise _addr_error(text, "unexpected character", text[i:])
    if len(fields) < 3:
        raise _addr_error(text, "IPv4 address too short")
    return [*fields, value]


def _ipv6(text: str) -> ParsedAddr:
    """parseIPv6: hex fields, one ``::``, an embedded IPv4 address in the last 32 bits."""
    rest, zone = text, ""
    if "%" in rest:
        rest, zone = rest.split("%", 1)
        if not zone:
            raise _addr_error(text, "zone must be a non-empty string")
    octets = [0] * 16
    ellipsis = -1
    if rest.startswith("::"):
        ellipsis, rest = 0, rest[2:]
        if not rest:
            return ParsedAddr(ipaddress.IPv6Address(0), zone)
    i = 0
    while i < 16:
        off, acc = 0, 0
        while off < len(rest):
            digit = "0123456789abcdef".find(rest[off].lower())
            if digit < 0 or not rest[off].isascii():
                break
            acc = (acc << 4) + digit
            if acc > 0xFFFF:
                raise _addr_error(text, "IPv6 field has value >=2^16", rest)
            off += 1
        if off == 0:
            raise _addr_error(text, "each colon-separated field must have at least one digit",
                              rest)
        if off < len(rest) and rest[off] == ".":
            if ellipsis < 0 and i != 12:
                raise _addr_error(text, "embedded IPv4 address must replace the final 2 fields "
                                        "of the address", rest)
            if i + 4 > 16:
                raise _addr_error(text, "too many hex fields to fit an embedded IPv4 at the end "
                                        "of the address", rest)
            try:
                octets[i:i + 4] = _ipv4(rest)
            except NetipError as exc:
                raise _addr_error(text, str(exc), rest) from None
            rest = ""
            i += 4
            break
        octets[i], octets[i + 1] = acc >> 8, acc & 0xFF
        i += 2
        rest = rest[off:]
        if not rest:
            break
        if rest[0] != ":":
            raise _addr_error(text, "unexpected character, want colon", rest)
        if len(rest) == 1:
            raise _addr_error(text, "colon must be followed by more characters", rest)
        rest = rest[1:]
        if rest[0] == ":":
            if ellipsis >= 0:
                raise _addr_error(text, "multiple :: in address", rest)
            ellipsis, rest = i, rest[1:]
            if not rest:
                break
    if rest:
        raise _addr_error(text, "trailing garbage after address", rest)
    if i < 16:
        if ellipsis < 0:
            raise _addr_error(text, "address string too short")
        gap = 16 - i
        octets = octets[:ellipsis] + [0] * gap + octets[ellipsis:i]
    elif ellipsis >= 0:
        raise _addr_error(text, "the :: must expand to at least one field of zeros")
    return ParsedAddr(ipaddress.IPv6Address(bytes(octets)), zone)


def parse_prefix(text: str) -> tuple[Address, int]:
    """netip.ParsePrefix: the address (host bits kept) and the length; NetipError as Go's
    parsePrefixError."""
    def failure(message: str) -> NetipError:
        return NetipError(f"netip.ParsePrefix({go_quote(text)}): {message}")

    slash = text.rfind("/")
    if slash < 0:
        raise failure("no '/'")
    try:
        parsed = parse_addr(text[:slash])
    except NetipError as exc:
        raise failure(str(exc)) from None
    if parsed.zone:
        raise failure("IPv6 zones cannot be present in a prefix")
    bits = text[slash + 1:]
    # strconv.Atoi takes a sign and leading zeros, which ParsePrefix refuses first
    if len(bits) > 1 and not "1" <= bits[0] <= "9":
        raise failure(f"bad bits after slash: {go_quote(bits)}")
    body = bits[1:] if bits[:1] in ("+", "-") else bits
    if not body or not body.isascii() or not body.isdigit():
        raise failure(f"bad bits after slash: {go_quote(bits)}")
    length = int(bits)
    if length > 2**63 - 1:  # strconv.Atoi's range error
        raise failure(f"bad bits after slash: {go_quote(bits)}")
    if length < 0 or length > parsed.address.max_prefixlen:
        raise failure("prefix length out of range")
    return parsed.address, length
