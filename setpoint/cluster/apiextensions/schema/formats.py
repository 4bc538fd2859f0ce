"""String formats a CRD schema may name (the ``kube-openapi`` strfmt registry).

Only the formats apiextensions-apiserver v0.32 keeps (pkg/apiserver/validation/formats.go
``supportedFormats``, after go-openapi's name normalization that drops every "-") are
validated; any other format validates nothing, as in Kubernetes. Each check follows
kube-openapi pkg/validation/strfmt (default.go, date.go, time.go, duration.go, bson.go) and
the govalidator functions it registers (github.com/asaskevich/govalidator f61b66f).
"""

from __future__ import annotations

import datetime
import ipaddress
import re
from collections.abc import Callable
from urllib.parse import urlsplit

from .goregexp import compile_go

# strfmt's DateTimePattern, matched against what follows the date (the "." is any character)
_TIME_OF_DAY = re.compile(
    r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
_FULL_DATE = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})$")
# Go's time.ParseDuration grammar; strfmt falls back to its Scala-style matcher below
_GO_DURATION = re.compile(r"^[-+]?(0|((\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)$")
_SCALA_DURATION = re.compile(r"(\d+)\s*([A-Za-zµ]+)")
_DURATION_UNITS = (("ns", "nano"), ("us", "µs", "micro"), ("ms", "milli"), ("s", "sec"),
                   ("m", "min"), ("h", "hr", "hour"), ("d", "day"), ("w", "wk", "week"))
# default.go patterns (Go RE2 syntax: \p classes, so compiled by RE2)
_HOSTNAME = (r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}"
             r"\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}"
             r"([a-zA-Z\p{L}]){2,63})$")
_UUID = r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
_UUID3 = r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
_UUID4 = r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
_UUID5 = r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
# govalidator patterns.go
_CREDIT_CARD = (r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|"
                r"3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$")
_ISBN10 = r"^(?:[0-9]{9}X|[0-9]{10})$"
_ISBN13 = r"^(?:[0-9]{13})$"
_HEXCOLOR = r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"
_BYTE = r"(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])"
_RGBCOLOR = rf"^rgb\(\s*{_BYTE}\s*,\s*{_BYTE}\s*,\s*{_BYTE}\s*\)$"
_BASE64 = (r"^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|"
           r"[A-Za-z0-9+\/]{4})$")
_SSN = r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"
_MAC = re.compile(r"^(?:[0-9A-Fa-f]{2}(?:[:-][0-9A-Fa-f]{2})*|"
                  r"[0-9A-Fa-f]{4}(?:\.[0-9A-Fa-f]{4})*)$")
_BSON = re.compile(r"^[0-9a-fA-F]{24}$")
_EMAIL = re.compile(r"^[^@\s<>()\[\]\\,;:\"]+@[^@\s<>()\[\]\\,;:\"]+$")


def _go(pattern: str) -> Callable[[str], bool]:
    return lambda s: compile_go(pattern).search(s) is not None


def _date(s: str) -> bool:
    """strfmt ``IsDate``: Go's ``time.Parse("2006-01-02", s)``, so a day the month lacks fails."""
    m = _FULL_DATE.match(s)
    if m is None:
        return False
    try:
        # Go's year 0 is a leap year, as 2000 is; Python's calendar starts at year 1
        datetime.date(int(m[1]) or 2000, int(m[2]), int(m[3]))
    except ValueError:
        return False
    return True


def _date_time(s: str) -> bool:
    """strfmt ``IsDateTime``: split at the first "t" (case folded), a full date before it and
    seconds with a "z" or numeric offset after it, only the piece up to a second "t" checked."""
    if len(s) < 4:
        return False
    parts = s.lower().split("t")
    if len(parts) < 2 or not _date(parts[0]):
        return False
    m = _TIME_OF_DAY.match(parts[1])
    return m is not None and m[1] <= "23" and m[2] <= "59" and m[3] <= "59"


def _duration(s: str) -> bool:
    """strfmt ``ParseDuration``: Go's time.ParseDuration, else any "<digits> <unit>" found
    anywhere whose unit is a known name or starts with a unit's last (long) spelling."""
    if _GO_DURATION.match(s):
        return True
    for m in _SCALA_DURATION.finditer(s):
        if len(m[1]) > 18:
            return False  # strconv.Atoi overflows: ParseDuration returns its error
        unit = m[2].strip().lower()
        if any(unit == v or (i == len(vs) - 1 and unit.startswith(v))
               for vs in _DURATION_UNITS for i, v in enumerate(vs)):
            return True
    return False


def _parse_ip(s: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """k8s.io/utils/net ParseIPSloppy: Go's net.ParseIP, except IPv4 octets may have leading
    zeros (read as decimal); no IPv6 zone."""
    if "%" in s:
        return None
    if "." in s and ":" not in s:
        octets = s.split(".")
        if len(octets) != 4 or not all(o.isdigit() and o.isascii() and len(o) <= 3
                                       and int(o) <= 255 for o in octets):
            return None
        return ipaddress.IPv4Address(".".join(str(int(o)) for o in octets))
    try:
        return ipaddress.ip_address(s)
    except ValueError:
        return None


def _ipv4(s: str) -> bool:
    return _parse_ip(s) is not None and "." in s


def _ipv6(s: str) -> bool:
    """govalidator IsIPv6: net.ParseIP and a ":" (so "::ffff:1.2.3.4" passes)."""
    try:
        return "%" not in s and ipaddress.ip_address(s) is not None and ":" in s
    except ValueError:
        return False


def _cidr(s: str) -> bool:
    """k8s.io/utils/net ParseCIDRSloppy: an address, "/", and a prefix length in range."""
    addr, slash, bits = s.partition("/")
    ip = _parse_ip(addr)
    if not slash or ip is None or not bits.isdigit() or not bits.isascii() or len(bits) > 3:
        return False
    return int(bits) <= (32 if ip.version == 4 else 128)


def _mac(s: str) -> bool:
    """Go's net.ParseMAC: 6, 8 or 20 octets, colon/hyphen pairs or dotted quads."""
    if not _MAC.match(s):
        return False
    digits = len(re.sub(r"[:.-]", "", s)) // 2
    return digits in (6, 8, 20) and ("." not in s or len(s) in (14, 19, 49))


def _isbn(version: int) -> Callable[[str], bool]:
    def check(s: str) -> bool:
        sanitized = re.sub(r"[\s-]+", "", s)
        if version == 10:
            if not compile_go(_ISBN10).search(sanitized):
                return False
            total = sum((i + 1) * int(sanitized[i]) for i in range(9))
            total += 100 if sanitized[9] == "X" else 10 * int(sanitized[9])
            return total % 11 == 0
        if not compile_go(_ISBN13).search(sanitized):
            return False
        total = sum((1, 3)[i % 2] * int(sanitized[i]) for i in range(12))
        return int(sanitized[12]) - (10 - total % 10) % 10 == 0
    return check


def _credit_card(s: str) -> bool:
    """govalidator IsCreditCard: non-digits dropped, the issuer pattern, then Luhn."""
    sanitized = re.sub(r"[^0-9]+", "", s)
    if not compile_go(_CREDIT_CARD).search(sanitized):
        return False
    total = 0
    for i, ch in enumerate(reversed(sanitized)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d >= 10 else d
    return total % 10 == 0


def _ssn(s: str) -> bool:
    return len(s) == 11 and compile_go(_SSN).search(s) is not None


def _hostname(s: str) -> bool:
    return (compile_go(_HOSTNAME).search(s) is not None and len(s.encode()) <= 255
            and all(len(p.encode()) <= 63 for p in s.split(".")))


def _email(s: str) -> bool:
    """strfmt IsEmail: net/mail.ParseAddress, so a display name before "<addr>" is allowed."""
    if s.endswith(">") and "<" in s:
        s = s[s.rindex("<") + 1:-1]
    return bool(_EMAIL.match(s))


def _request_uri(s: str) -> bool:
    """govalidator IsRequestURI: Go's url.ParseRequestURI, an absolute URI or an absolute
    path, no fragment split off and no space or control character."""
    if not s or any(ord(c) < 0x21 or c == "\x7f" for c in s):
        return False
    if s.startswith("/"):
        return True
    scheme, colon, _ = s.partition(":")
    if not colon or not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*$", scheme):
        return False
    try:
        urlsplit(s)
    except ValueError:
        return False
    return True


FORMATS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda s: bool(_BSON.match(s)),
    "uri": _request_uri,
    "email": _email,
    "hostname": _hostname,
    "ipv4": _ipv4,
    "ipv6": _ipv6,
    "cidr": _cidr,
    "mac": _mac,
    "uuid": _go(_UUID),
    "uuid3": _go(_UUID3),
    "uuid4": _go(_UUID4),
    "uuid5": _go(_UUID5),
    "isbn": lambda s: _isbn(10)(s) or _isbn(13)(s),
    "isbn10": _isbn(10),
    "isbn13": _isbn(13),
    "creditcard": _credit_card,
    "ssn": _ssn,
    "hexcolor": _go(_HEXCOLOR),
    "rgbcolor": _go(_RGBCOLOR),
    "byte": _go(_BASE64),
    "password": lambda s: True,
    "date": _date,
    "duration": _duration,
    "datetime": _date_time,
}


def format_ok(fmt: str, value: str) -> bool:
    """Whether ``value`` is valid for ``fmt``; a format apiextensions strips (unknown, or not
    in ``supportedFormats``) always passes. Names are compared without their dashes."""
    check = FORMATS.get(fmt.replace("-", ""))
    return True if check is None else check(value)
