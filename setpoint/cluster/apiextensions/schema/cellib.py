"""The CEL environment of CRD validation rules, on top of ``celpy``.

Kubernetes evaluates ``x-kubernetes-validations`` with cel-go plus its own libraries. Here:
schema-directed conversion of JSON values (numbers are doubles, ``date-time`` strings are
timestamps, ``duration`` strings durations, ``byte`` strings bytes), heterogeneous numeric
comparison and equality (as cel-go enables for Kubernetes), and the extension functions rules
commonly use: the strings extension, the Kubernetes lists, regex, URL, IP/CIDR and quantity
libraries.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from celpy import celtypes
from celpy.evaluation import CELEvalError

from setpoint.machinery.gofmt import go_quote
from setpoint.machinery.quantity import Quantity, QuantityError

from . import celnetip, celstrings
from .goregexp import GoRegexpError, compile_go

CelValue = Any


# -- values ----------------------------------------------------------------------------------

def to_cel(value: Any, schema: Mapping[str, Any] | None) -> CelValue:
    """A decoded JSON value as a CEL value typed by its schema."""
    s = schema or {}
    if value is None:
        return None
    stype = s.get("type")
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int | float):
        if stype == "number" or (isinstance(value, float) and stype != "integer") \
                or abs(value) > 2**63 - 1:
            return celtypes.DoubleType(float(value))
        return celtypes.IntType(int(value))
    if isinstance(value, str):
        fmt = s.get("format") if stype == "string" else None
        try:
            if fmt in ("date-time", "datetime", "date"):
                text = value if fmt != "date" else value + "T00:00:00Z"
                return celtypes.TimestampType(text)
            if fmt == "duration":
                return celtypes.DurationType(value)
            if fmt == "byte":
                return celtypes.BytesType(base64.b64decode(value))
        except (ValueError, TypeError):
            pass
        return celtypes.StringType(value)
    if isinstance(value, list):
        items = s.get("items") if isinstance(s.get("items"), Mapping) else None
        return celtypes.ListType([to_cel(v, items) for v in value])
    if isinstance(value, dict):
        props = s.get("properties") or {}
        additional = s.get("additionalProperties")
        out = {}
        for k, v in value.items():
            sub = props.get(k)
            if sub is None and isinstance(additional, Mapping):
                sub = additional
            out[celtypes.StringType(k)] = to_cel(v, sub)
        return celtypes.MapType(out)
    return value


# -- operators -------------------------------------------------------------------------------

def _numeric(v: Any) -> bool:
    return isinstance(v, celtypes.IntType | celtypes.UintType | celtypes.DoubleType) \
        and not isinstance(v, celtypes.BoolType)


def _promote(a: Any, b: Any) -> tuple[Any, Any]:
    if _numeric(a) and _numeric(b) and type(a) is not type(b):
        return float(a), float(b)
    return a, b


def _relation(op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
    def apply(a: Any, b: Any) -> Any:
        if isinstance(a, CELEvalError):
            return a
        if isinstance(b, CELEvalError):
            return b
        if isinstance(a, Quantity) or isinstance(b, Quantity):
            raise TypeError("no such overload")
        x, y = _promote(a, b)
        same = type(x) is type(y) or all(isinstance(v, float) for v in (x, y)) \
            or all(isinstance(v, str) for v in (x, y))
        if not same:
            raise TypeError(f"no such overload: {type(a).__name__} {type(b).__name__}")
        return celtypes.BoolType(op(x, y))
    return apply


def _eq(a: Any, b: Any) -> Any:
    if isinstance(a, CELEvalError):
        return a
    if isinstance(b, CELEvalError):
        return b
    x, y = _promote(a, b)
    if _numeric(x) or isinstance(x, float):
        return celtypes.BoolType(x == y and (_numeric(y) or isinstance(y, float)))
    if isinstance(x, celtypes.BoolType) != isinstance(y, celtypes.BoolType):
        return celtypes.BoolType(False)
    try:
        return celtypes.BoolType(x == y)
    except TypeError:
        return celtypes.BoolType(False)


def _ne(a: Any, b: Any) -> Any:
    result = _eq(a, b)
    return result if isinstance(result, CELEvalError) else celtypes.BoolType(not result)


# -- strings extension -----------------------------------------------------------------------

def _s(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError("no such overload")
    return str(v)


def _index_of(target: Any, needle: Any, *offset: Any) -> Any:
    if isinstance(target, list):
        for i, v in enumerate(target):
            if bool(_eq(v, needle)):
                return celtypes.IntType(i)
        return celtypes.IntType(-1)
    return celstrings.STRING_INDEX["indexOf"](target, needle, *offset)


def _last_index_of(target: Any, needle: Any, *offset: Any) -> Any:
    if isinstance(target, list):
        for i in range(len(target) - 1, -1, -1):
            if bool(_eq(target[i], needle)):
                return celtypes.IntType(i)
        return celtypes.IntType(-1)
    return celstrings.STRING_INDEX["lastIndexOf"](target, needle, *offset)


# -- lists (k8s) -------------------------------------------------------------------------------

def _is_sorted(items: Any) -> Any:
    return celtypes.BoolType(all(items[i] <= items[i + 1] for i in range(len(items) - 1)))


def _sum(items: Any) -> Any:
    if not items:
        return celtypes.IntType(0)
    total = items[0]
    for v in items[1:]:
        total = total + v
    return total


def _extreme(name: str) -> Callable[[Any], Any]:
    """library/lists.go cmp: the least (min) or greatest (max) element; an empty list is
    an error."""
    def call(items: Any) -> Any:
        if not isinstance(items, list):
            raise TypeError("no such overload")
        if not items:
            return CELEvalError(f"{name} called on empty list")
        return min(items) if name == "min" else max(items)
    return call


# -- regex (k8s) ------------------------------------------------------------------------------
# Go's regexp (RE2) for matches, find and findAll: k8s.io/apiserver pkg/cel/library/regex.go
# compiles with regexp.Compile, cel-go's String.Match with regexp.MatchString.

def _go_regexp(pattern: Any, prefix: str = "") -> Any:
    """The compiled pattern, or a CELEvalError with Go's message (returned, not raised:
    celpy words a raised ValueError as an overflow)."""
    try:
        return compile_go(_s(pattern))
    except GoRegexpError as exc:
        return CELEvalError(prefix + str(exc))


def _matches(text: Any, pattern: Any) -> Any:
    """cel-go ``matches``: an invalid pattern is the bare Go regexp error."""
    regexp = _go_regexp(pattern)
    if isinstance(regexp, CELEvalError):
        return regexp
    return celtypes.BoolType(regexp.search(_s(text)) is not None)


def _find(text: Any, pattern: Any) -> Any:
    regexp = _go_regexp(pattern, "Illegal regex: ")
    if isinstance(regexp, CELEvalError):
        return regexp
    m = regexp.search(_s(text))
    return celtypes.StringType(m.group(0) if m else "")


def _find_all(text: Any, pattern: Any, limit: Any = -1) -> Any:
    """Go's ``FindAllString(s, n)``: an empty match right after the previous match is
    skipped, and n >= 0 keeps the first n."""
    regexp = _go_regexp(pattern, "Illegal regex: ")
    if isinstance(regexp, CELEvalError):
        return regexp
    n = int(limit)
    found: list[Any] = []
    prev_end = -1
    for m in regexp.finditer(_s(text)):
        if n >= 0 and len(found) >= n:
            break
        if m.start() == m.end() and m.start() == prev_end:
            continue
        found.append(celtypes.StringType(m.group(0)))
        prev_end = m.end()
    return celtypes.ListType(found)


# -- URLs (k8s) -------------------------------------------------------------------------------

class URL:
    """A parsed URL (``url("https://...")``); host and port split as Go's net/url does."""

    def __init__(self, text: str) -> None:
        parts = urlsplit(text)
        if not parts.scheme and not text.startswith("/"):
            # urls.go: url.ParseRequestURI's refusal of a relative reference
            raise ValueError("URL parse error during conversion from string: "
                             f'parse "{text}": invalid URI for request')
        self.text = text
        self.parts = parts
        self.host = parts.netloc.rpartition("@")[2]  # url.URL.Host: host[:port], no userinfo
        colon = self.host.rfind(":")
        if colon > self.host.rfind("]") and not _valid_optional_port(self.host[colon:]):
            # net/url parseHost
            raise ValueError("URL parse error during conversion from string: "
                             f'parse "{text}": invalid port "{self.host[colon:]}" after host')

    def host_port(self) -> tuple[str, str]:
        """net/url splitHostPort: Hostname() (without brackets) and Port()."""
        host, port = self.host, ""
        colon = host.rfind(":")
        if colon != -1 and _valid_optional_port(host[colon:]):
            host, port = host[:colon], host[colon + 1:]
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        return host, port


def _valid_optional_port(port: str) -> bool:
    return port == "" or (port[0] == ":" and all("0" <= c <= "9" for c in port[1:]))


def _url(text: Any) -> Any:
    try:
        return URL(_s(text))
    except ValueError as exc:
        return CELEvalError(str(exc))


def _get_query(u: Any) -> Any:
    """urls.go getQuery: url.Values, each key's values in order (blank ones kept)."""
    if not isinstance(u, URL):
        raise TypeError("no such overload")
    query: dict[str, list[str]] = {}
    for key, value in parse_qsl(u.parts.query, keep_blank_values=True):
        query.setdefault(key, []).append(value)
    return celtypes.MapType({celtypes.StringType(k): celtypes.ListType(
        [celtypes.StringType(v) for v in vs]) for k, vs in query.items()})


def _is_url(text: Any) -> Any:
    try:
        URL(_s(text))
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


# -- IP / CIDR (k8s) --------------------------------------------------------------------------

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def _parse_ip(raw: str) -> IPAddress | CELEvalError:
    """library/ip.go parseIPAddr: netip.ParseAddr (its error quoted), refusing zones and
    IPv4-mapped IPv6."""
    try:
        parsed = celnetip.parse_addr(raw)
    except celnetip.NetipError as exc:
        return CELEvalError(f"IP Address {go_quote(raw)} parse error during conversion from "
                            f"string: {exc}")
    if parsed.zone:
        return CELEvalError(f"IP address {go_quote(raw)} with zone value is not allowed")
    addr = parsed.address
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return CELEvalError(f"IPv4-mapped IPv6 address {go_quote(raw)} is not allowed")
    return addr


@dataclass(frozen=True)
class CIDR:
    """A netip.Prefix (apiserver pkg/cel/cidr.go): the address keeps its host bits, so
    ``cidr('10.0.0.1/8').ip()`` is 10.0.0.1 and equality compares address and length."""

    addr: IPAddress
    bits: int

    def __str__(self) -> str:
        return f"{self.addr}/{self.bits}"

    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        return ipaddress.ip_network(f"{self.addr}/{self.bits}", strict=False)

    def masked(self) -> CIDR:
        return CIDR(self.network().network_address, self.bits)


_CIDR_PARSE_ERROR = "network address parse error during conversion from string: "


def _parse_cidr(raw: str) -> CIDR | CELEvalError:
    """library/cidr.go parseCIDR: netip.ParsePrefix (its error quoted), refusing
    IPv4-mapped IPv6; the error as stringToCIDR returns it, worded once more."""
    try:
        addr, bits = celnetip.parse_prefix(raw)
    except celnetip.NetipError as exc:
        return CELEvalError(f"{_CIDR_PARSE_ERROR}{_CIDR_PARSE_ERROR}{exc}")
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return CELEvalError(f"{_CIDR_PARSE_ERROR}IPv4-mapped IPv6 address {go_quote(raw)} is "
                            "not allowed")
    return CIDR(addr, bits)


def _ip(text: Any) -> Any:
    if isinstance(text, CIDR):  # cidr.go: cidr.ip(), the address as written
        return text.addr
    return _parse_ip(_s(text))


def _cidr(text: Any) -> Any:
    return _parse_cidr(_s(text))


def _is_ip(text: Any) -> Any:
    return celtypes.BoolType(not isinstance(_parse_ip(_s(text)), CELEvalError))


def _is_cidr(text: Any) -> Any:
    return celtypes.BoolType(not isinstance(_parse_cidr(_s(text)), CELEvalError))


def _is_global_unicast(ip: Any) -> Any:
    """netip.Addr.IsGlobalUnicast (library/ip.go): private IPv4 and ULA IPv6 addresses
    count; unspecified, broadcast, loopback, multicast and link-local unicast do not."""
    if not isinstance(ip, ipaddress.IPv4Address | ipaddress.IPv6Address):
        raise TypeError("no such overload")
    broadcast = ip == ipaddress.IPv4Address("255.255.255.255")
    return celtypes.BoolType(not (ip.is_unspecified or broadcast or ip.is_loopback
                                  or ip.is_multicast or ip.is_link_local))


def _is_link_local_multicast(ip: Any) -> Any:
    # netip: 224.0.0.0/24, or ff02::/16 (the multicast link-local scope)
    if isinstance(ip, ipaddress.IPv4Address):
        return celtypes.BoolType(ip in ipaddress.IPv4Network("224.0.0.0/24"))
    if isinstance(ip, ipaddress.IPv6Address):
        return celtypes.BoolType((int(ip) >> 112) & 0xFF0F == 0xFF02)
    raise TypeError("no such overload")


def _is_canonical(text: Any) -> Any:
    """ip.go ipIsCanonical: parseIPAddr's error, or whether ``s`` is how the address is
    written back (Addr.String)."""
    addr = _parse_ip(_s(text))
    if isinstance(addr, CELEvalError):
        return addr
    return celtypes.BoolType(str(addr) == _s(text))


def _contains_ip(net: Any, ip: Any) -> Any:
    """cidr.go cidrContainsIP: netip.Prefix.Contains (a different family is not
    contained). A string converts with stringToIP; when it does not parse, cidrContainsIP
    meets an error where it wants an IP and answers MaybeNoSuchOverloadErr of the CIDR:
    "no such overload", not the parse error."""
    addr = _parse_ip(ip) if isinstance(ip, str) else ip
    if not isinstance(net, CIDR) or not isinstance(addr, IPAddress):
        raise TypeError("no such overload")
    return celtypes.BoolType(addr.version == net.addr.version and addr in net.network())


def _contains_cidr(net: Any, other: Any) -> Any:
    """cidr.go cidrContainsCIDR: same masked network at net's length, and other's length
    no shorter."""
    sub = _parse_cidr(other) if isinstance(other, str) else other
    if isinstance(sub, CELEvalError):
        return sub
    if not isinstance(net, CIDR) or not isinstance(sub, CIDR):
        raise TypeError("no such overload")
    return celtypes.BoolType(sub.addr.version == net.addr.version and net.bits <= sub.bits
                             and sub.addr in net.network())


# -- quantity (k8s) ---------------------------------------------------------------------------

def _quantity(text: Any) -> Any:
    try:
        return Quantity.parse(_s(text))
    except QuantityError as exc:  # quantity.go stringToQuantity: ParseQuantity's error
        return CELEvalError(str(exc))


def _is_quantity(text: Any) -> Any:
    try:
        Quantity.parse(_s(text))
    except QuantityError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _as_quantity(v: Any) -> Quantity:
    if isinstance(v, Quantity):
        return v
    if isinstance(v, int):
        return Quantity.from_int(int(v))
    raise TypeError("no such overload")


def _add(a: Any, b: Any) -> Any:
    return _as_quantity(a) + _as_quantity(b)


def _sub(a: Any, b: Any) -> Any:
    return _as_quantity(a) - _as_quantity(b)


def _compare_to(a: Any, b: Any) -> Any:
    return celtypes.IntType(_as_quantity(a).cmp(_as_quantity(b)))


def _is_less_than(a: Any, b: Any) -> Any:
    if isinstance(a, Quantity):
        return celtypes.BoolType(a.cmp(_as_quantity(b)) < 0)
    raise TypeError("no such overload")


def _is_greater_than(a: Any, b: Any) -> Any:
    if isinstance(a, Quantity):
        return celtypes.BoolType(a.cmp(_as_quantity(b)) > 0)
    raise TypeError("no such overload")


_NANO = 10**9
_INT64_MAX = 2**63 - 1


def _integral(q: Quantity) -> bool:
    return q.nanos % _NANO == 0 and abs(q.nanos // _NANO) <= _INT64_MAX


def _as_integer(q: Any) -> Any:
    quantity = _as_quantity(q)
    if not _integral(quantity):
        return CELEvalError("cannot convert value to integer")
    return celtypes.IntType(quantity.nanos // _NANO)


def _sign(q: Any) -> Any:
    return celtypes.IntType(_as_quantity(q).sign())


def _is_integer(q: Any) -> Any:
    return celtypes.BoolType(_integral(_as_quantity(q)))


def _family(v: Any) -> Any:
    return celtypes.IntType(v.version)


def _str_method(name: str) -> Callable[..., Any]:
    def call(v: Any, *args: Any) -> Any:
        if isinstance(v, URL):
            p = v.parts
            hostname, port = v.host_port()
            values = {"getScheme": p.scheme, "getHost": v.host, "getHostname": hostname,
                      "getPort": port, "getEscapedPath": p.path}
            return celtypes.StringType(values[name])
        raise TypeError("no such overload")
    return call


def _sets(kind: str) -> Callable[[Any, Any], celtypes.BoolType]:
    """cel-go ext/sets.go: sets.contains(a, b) (every element of b is in a),
    sets.equivalent (each contains the other), sets.intersects (a common element); the
    elements compare with CEL equality, so 1, 1u and 1.0 are the same."""
    def call(a: Any, b: Any) -> celtypes.BoolType:
        if not isinstance(a, list) or not isinstance(b, list):
            raise TypeError("no such overload")
        def has(items: list[Any], x: Any) -> bool:
            return any(_cel_equal(x, y) for y in items)
        if kind == "intersects":
            return celtypes.BoolType(any(has(a, x) for x in b))
        contains = all(has(a, x) for x in b)
        if kind == "equivalent":
            contains = contains and all(has(b, x) for x in a)
        return celtypes.BoolType(contains)
    return call


def _cel_equal(x: Any, y: Any) -> bool:
    """CEL equality: numbers compare by value across int, uint and double (exactly, as
    Python compares int with float); other values of different types are unequal."""
    numbers = (int, float)
    if isinstance(x, numbers) and isinstance(y, numbers) and not isinstance(x, bool) \
            and not isinstance(y, bool):
        return (int(x) if isinstance(x, int) else float(x)) == (
            int(y) if isinstance(y, int) else float(y))
    try:
        return bool(x == y)
    except TypeError:  # celpy refuses comparing values of different CEL types
        return False


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sets.contains": _sets("contains"),
    "sets.equivalent": _sets("equivalent"),
    "sets.intersects": _sets("intersects"),
    "_<_": _relation(lambda a, b: a < b),
    "_<=_": _relation(lambda a, b: a <= b),
    "_>_": _relation(lambda a, b: a > b),
    "_>=_": _relation(lambda a, b: a >= b),
    "_==_": _eq,
    "_!=_": _ne,
    **celstrings.FUNCTIONS,
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "isSorted": _is_sorted,
    "sum": _sum,
    "min": _extreme("min"),
    "max": _extreme("max"),
    "matches": _matches,
    "find": _find,
    "findAll": _find_all,
    "url": _url,
    "isURL": _is_url,
    "getScheme": _str_method("getScheme"),
    "getHost": _str_method("getHost"),
    "getHostname": _str_method("getHostname"),
    "getPort": _str_method("getPort"),
    "getEscapedPath": _str_method("getEscapedPath"),
    "getQuery": _get_query,
    "ip": _ip,
    "isIP": _is_ip,
    "cidr": _cidr,
    "isCIDR": _is_cidr,
    "family": _family,
    "isLoopback": lambda v: celtypes.BoolType(v.is_loopback),
    "isUnspecified": lambda v: celtypes.BoolType(v.is_unspecified),
    "isGlobalUnicast": _is_global_unicast,
    "isLinkLocalMulticast": _is_link_local_multicast,
    "isLinkLocalUnicast": lambda v: celtypes.BoolType(v.is_link_local),
    "ip.isCanonical": _is_canonical,
    "containsIP": _contains_ip,
    "containsCIDR": _contains_cidr,
    "prefixLength": lambda n: celtypes.IntType(n.bits),
    "masked": lambda n: n.masked(),
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "add": _add,
    "sub": _sub,
    "compareTo": _compare_to,
    "isLessThan": _is_less_than,
    "isGreaterThan": _is_greater_than,
    "asInteger": _as_integer,
    "asApproximateFloat": lambda q: celtypes.DoubleType(_as_quantity(q).as_float()),
    "sign": _sign,
    "isInteger": _is_integer,
}


def error_text(exc: BaseException) -> str:
    """The short text of a celpy evaluation error."""
    if isinstance(exc, CELEvalError) and exc.args:
        text = str(exc.args[0])
        if text.startswith("no such member in mapping"):
            return "no such key: " + text.split(":", 1)[1].strip().strip("'")
        if text == "no such key" and len(exc.args) > 2 and exc.args[2]:
            # cel-go interpreter/attributes.go missingKey: "no such key: %v" of the key
            return f"no such key: {_go_key(exc.args[2][0])}"
        if text.startswith("found no matching overload") or text.startswith("no such overload"):
            return "no such overload"
        return text
    return str(exc)


def _go_key(key: Any) -> str:
    """A CEL map key as Go's %v prints the ref.Val (bools lower case, the rest as is)."""
    if isinstance(key, (bool, celtypes.BoolType)):
        return "true" if key else "false"
    return str(key)
