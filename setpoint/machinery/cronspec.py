"""The standard cron schedule grammar: github.com/robfig/cron/v3 parser.go ``ParseStandard``
(five fields minute..day-of-week, ``@`` descriptors, ``@every <duration>``, an optional
``TZ=``/``CRON_TZ=`` prefix) and Go's ``time.LoadLocation`` for its zone names.

One parser serves both sides: the server validates ``spec.schedule`` with it, putting the
parser's own error text into the cause (pkg/apis/batch/validation/validation.go
``validateScheduleFormat``), and the simulated CronJob controller runs the bit sets it
builds (``starBit`` included, which decides whether day of month and day of week must both
match) through spec.go's ``Next``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import NamedTuple

from setpoint.machinery.gofmt import go_quote
from setpoint.machinery.gotime import parse_duration

STAR_BIT = 1 << 63


class _Bounds(NamedTuple):
    low: int
    high: int
    names: dict[str, int]


_MONTHS = {m: i + 1 for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# parser.go: minutes, hours, dom, month, dow (the standard parser's seconds field is a
# constant "0", so it is left out)
_FIELDS = (_Bounds(0, 59, {}), _Bounds(0, 23, {}), _Bounds(1, 31, {}),
           _Bounds(1, 12, _MONTHS), _Bounds(0, 6, _DAYS))
# parser.go parseDescriptor's bit sets are those of these fields ("*" carries starBit)
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


class CronError(ValueError):
    """A schedule the parser refuses; ``str()`` is robfig/cron's message."""


@dataclass(frozen=True)
class CronSpec:
    """What ``ParseStandard`` returns: a ``SpecSchedule`` (bit sets; seconds always 0) or,
    with ``every`` (seconds), a ``ConstantDelaySchedule``."""

    minute: int = 0
    hour: int = 0
    dom: int = 0
    month: int = 0
    dow: int = 0
    zone: dt.tzinfo = dt.UTC
    every: float = 0.0


def location(name: str) -> dt.tzinfo:
    """``time.LoadLocation``; CronError with Go's text for a zone it does not know."""
    if name in ("", "UTC"):
        return dt.UTC
    if name == "Local":
        # Go reads the machine's zone; its current offset is the nearest Python has at hand
        return dt.datetime.now().astimezone().tzinfo or dt.UTC
    import zoneinfo  # with the first named zone: a server's start validates none

    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise CronError(f"unknown time zone {name}") from None


def load_location(name: str) -> str | None:
    """``time.LoadLocation``'s error for ``name`` (None when Go finds the zone)."""
    try:
        location(name)
    except CronError as err:
        return str(err)
    return None


def _atoi(expr: str) -> int:
    """``mustParseInt``: strconv.Atoi, then no negatives."""
    body = expr[1:] if expr[:1] in ("+", "-") else expr
    if not body or not body.isascii() or not body.isdigit():
        raise CronError(f"failed to parse int from {expr}: strconv.Atoi: parsing "
                        f"{go_quote(expr)}: invalid syntax")
    num = int(expr)
    if not -(2**63) <= num < 2**63:
        raise CronError(f"failed to parse int from {expr}: strconv.Atoi: parsing "
                        f"{go_quote(expr)}: value out of range")
    if num < 0:
        raise CronError(f"negative number ({num}) not allowed: {expr}")
    return num


def _int_or_name(expr: str, bounds: _Bounds) -> int:
    named = bounds.names.get(expr.lower())
    return named if named is not None else _atoi(expr)


def _range_bits(expr: str, bounds: _Bounds) -> int:
    """parser.go ``getRange``: the bits of one comma-separated part."""
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    extra = 0
    if low_high[0] in ("*", "?"):
        start, end, extra = bounds.low, bounds.high, STAR_BIT
    else:
        start = _int_or_name(low_high[0], bounds)
        if len(low_high) == 1:
            end = start
        elif len(low_high) == 2:
            end = _int_or_name(low_high[1], bounds)
        else:
            raise CronError(f"too many hyphens: {expr}")
    step = 1
    if len(range_and_step) == 2:
        step = _atoi(range_and_step[1])
        if len(low_high) == 1:  # "N/step" means "N-max/step"
            end = bounds.high
        if step > 1:
            extra = 0
    elif len(range_and_step) > 2:
        raise CronError(f"too many slashes: {expr}")
    if start < bounds.low:
        raise CronError(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise CronError(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")
    return sum(1 << i for i in range(start, end + 1, step)) | extra


def _field_bits(text: str, bounds: _Bounds) -> int:
    """parser.go ``getField``."""
    bits = 0
    for expr in (part for part in text.split(",") if part):
        bits |= _range_bits(expr, bounds)
    return bits


def parse_standard(schedule: str) -> CronSpec:
    """``cron.ParseStandard(schedule)``; CronError with the parser's text where it fails."""
    spec = schedule
    if not spec:
        raise CronError("empty spec string")
    zone: dt.tzinfo = dt.UTC
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space, eq = spec.find(" "), spec.find("=")
        name = spec[eq + 1:space] if space > eq else spec[eq + 1:]
        try:
            zone = location(name)
        except CronError as err:
            raise CronError(f"provided bad location {name}: {err}") from None
        spec = spec[space:].strip() if space >= 0 else ""
    if spec.startswith("@every "):
        try:
            seconds = parse_duration(spec[len("@every "):])
        except ValueError as err:
            raise CronError(f"failed to parse duration {spec}: {err}") from None
        # constantdelay.go Every: whole seconds, at least one
        return CronSpec(zone=zone, every=float(max(int(seconds), 1)))
    if spec.startswith("@") and spec not in _DESCRIPTORS:
        raise CronError(f"unrecognized descriptor: {spec}")
    fields = _DESCRIPTORS.get(spec, spec).split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: "
                        f"[{' '.join(fields)}]")
    minute, hour, dom, month, dow = (
        _field_bits(text, bounds) for text, bounds in zip(fields, _FIELDS, strict=True))
    return CronSpec(minute=minute, hour=hour, dom=dom, month=month, dow=dow, zone=zone)
