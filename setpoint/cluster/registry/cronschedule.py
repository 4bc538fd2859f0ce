"""The CronJob schedule grammar kube-apiserver 1.32 accepts: github.com/robfig/cron/v3
``ParseStandard`` (parser.go: five fields minute..day-of-week, ``@`` descriptors,
``@every <duration>``, an optional ``TZ=``/``CRON_TZ=`` prefix), returning the parser's own
error text, which pkg/apis/batch/validation/validation.go ``validateScheduleFormat`` puts
into the ``spec.schedule`` cause; and Go's ``time.LoadLocation`` for zone names."""

from __future__ import annotations

import zoneinfo
from typing import NamedTuple

from setpoint.machinery.gofmt import go_quote
from setpoint.machinery.gotime import parse_duration


class _Bounds(NamedTuple):
    low: int
    high: int
    names: dict[str, int]


_MONTHS = {m: i + 1 for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# parser.go: seconds (always "0" for the standard parser), minutes, hours, dom, month, dow
_FIELDS = (_Bounds(0, 59, {}), _Bounds(0, 59, {}), _Bounds(0, 23, {}), _Bounds(1, 31, {}),
           _Bounds(1, 12, _MONTHS), _Bounds(0, 6, _DAYS))
_DESCRIPTORS = {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight",
                "@hourly"}


class CronError(ValueError):
    """A schedule the parser refuses; ``str()`` is robfig/cron's message."""


def load_location(name: str) -> str | None:
    """``time.LoadLocation``'s error for ``name`` (None when Go finds the zone)."""
    if name in ("", "UTC", "Local"):
        return None
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return f"unknown time zone {name}"
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


def _check_range(expr: str, bounds: _Bounds) -> None:
    """parser.go ``getRange``."""
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    if low_high[0] in ("*", "?"):
        start, end = bounds.low, bounds.high
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


def parse_standard(schedule: str) -> None:
    """Raise :class:`CronError` where ``cron.ParseStandard(schedule)`` returns an error."""
    spec = schedule
    if not spec:
        raise CronError("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space, eq = spec.find(" "), spec.find("=")
        zone = spec[eq + 1:space] if space > eq else spec[eq + 1:]
        problem = load_location(zone)
        if problem is not None:
            raise CronError(f"provided bad location {zone}: {problem}")
        spec = spec[space:].strip() if space >= 0 else ""
    if spec.startswith("@"):
        if spec in _DESCRIPTORS:
            return
        if spec.startswith("@every "):
            try:
                parse_duration(spec[len("@every "):])
            except ValueError as err:
                raise CronError(f"failed to parse duration {spec}: {err}") from None
            return
        raise CronError(f"unrecognized descriptor: {spec}")
    fields = spec.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: "
                        f"[{' '.join(fields)}]")
    for text, bounds in zip(["0", *fields], _FIELDS, strict=True):
        for expr in (part for part in text.split(",") if part):
            _check_range(expr, bounds)
