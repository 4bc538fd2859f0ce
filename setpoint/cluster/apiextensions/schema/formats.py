"""String formats a CRD schema may name (the ``kube-openapi`` strfmt registry).

Unknown formats validate nothing, as in Kubernetes.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import ipaddress
import re
from collections.abc import Callable

# strfmt's DateTimePattern, matched against what follows the date (the "." is any character)
_TIME_OF_DAY = re.compile(
    r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
_FULL_DATE = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})$")
_DURATION = re.compile(
    r"^[-+]?(\d+(\.\d+)?\s*(ns|us|µs|ms|s|m|h|d|w|"
    r"nanoseconds?|microseconds?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?"
    r")\s*)+$")
_UUID = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$", re.I)
_UUID_N = {v: re.compile(
    rf"^[0-9a-f]{{8}}-?[0-9a-f]{{4}}-?{v}[0-9a-f]{{3}}-?[89ab][0-9a-f]{{3}}-?[0-9a-f]{{12}}$",
    re.I) for v in "345"}
_HOSTNAME = re.compile(
    r"^([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}"
    r"[a-zA-Z0-9])?)*\.?$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}([0-9A-Fa-f]{2})$|^([0-9A-Fa-f]{4}\.){2}"
                  r"[0-9A-Fa-f]{4}$")
_HEXCOLOR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_RGBCOLOR = re.compile(r"^rgb\(\s*\d{1,3}\s*,\s*\d{1,3}\s*,\s*\d{1,3}\s*\)$")
_BSON = re.compile(r"^[0-9a-fA-F]{24}$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s]*$|^//[^\s]+$|^/[^\s]*$")


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


def _ip(version: int) -> Callable[[str], bool]:
    def check(s: str) -> bool:
        try:
            return ipaddress.ip_address(s).version == version
        except ValueError:
            return False
    return check


def _cidr(s: str) -> bool:
    try:
        ipaddress.ip_network(s, strict=False)
    except ValueError:
        return False
    return "/" in s


def _byte(s: str) -> bool:
    try:
        base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _matcher(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda s: bool(pattern.match(s))


FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": _date_time,
    "datetime": _date_time,
    "date": _date,
    "duration": _matcher(_DURATION),
    "byte": _byte,
    "uuid": _matcher(_UUID),
    "uuid3": _matcher(_UUID_N["3"]),
    "uuid4": _matcher(_UUID_N["4"]),
    "uuid5": _matcher(_UUID_N["5"]),
    "ipv4": _ip(4),
    "ipv6": _ip(6),
    "cidr": _cidr,
    "mac": _matcher(_MAC),
    "hostname": _matcher(_HOSTNAME),
    "email": _matcher(_EMAIL),
    "uri": _matcher(_URI),
    "hexcolor": _matcher(_HEXCOLOR),
    "rgbcolor": _matcher(_RGBCOLOR),
    "bsonobjectid": _matcher(_BSON),
}


def format_ok(fmt: str, value: str) -> bool:
    """Whether ``value`` is valid for ``fmt``; formats Kubernetes does not know always pass."""
    check = FORMATS.get(fmt)
    return True if check is None else check(value)
