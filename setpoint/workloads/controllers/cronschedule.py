"""When a CronJob's schedule fires: github.com/robfig/cron/v3 ``ParseStandard`` and
``Schedule.Next`` as kube-controller-manager's CronJob controller uses them.

The server has validated the schedule's grammar (and its error texts) already; this module
only builds the bit sets of parser.go (``starBit`` included, which decides whether day of
month and day of week must both match) and walks spec.go's ``SpecSchedule.Next`` or
constantdelay.go's ``@every``.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from dataclasses import dataclass

from setpoint.machinery.gotime import parse_duration

STAR_BIT = 1 << 63
_MONTHS = {m: i + 1 for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# (low, high, names): minutes, hours, day of month, month, day of week
_BOUNDS: tuple[tuple[int, int, dict[str, int]], ...] = (
    (0, 59, {}), (0, 23, {}), (1, 31, {}), (1, 12, _MONTHS), (0, 6, _DAYS))
UTC = dt.UTC


class ScheduleError(ValueError):
    """A schedule the controller cannot run (the server refuses such schedules first)."""


def _bits(low: int, high: int, step: int) -> int:
    return sum(1 << i for i in range(low, high + 1, step))


def _number(text: str, names: dict[str, int]) -> int:
    return names[text.lower()] if text.lower() in names else int(text)


def _field(text: str, low: int, high: int, names: dict[str, int]) -> int:
    """parser.go ``getField`` over ``getRange``."""
    bits = 0
    for expr in (part for part in text.split(",") if part):
        range_and_step = expr.split("/")
        low_high = range_and_step[0].split("-")
        extra = 0
        if low_high[0] in ("*", "?"):
            start, end, extra = low, high, STAR_BIT
        else:
            start = _number(low_high[0], names)
            end = _number(low_high[1], names) if len(low_high) == 2 else start
        step = 1
        if len(range_and_step) == 2:
            step = int(range_and_step[1])
            if len(low_high) == 1:
                end = high
            if step > 1:
                extra = 0
        bits |= _bits(start, end, step) | extra
    return bits


@dataclass(frozen=True)
class Schedule:
    """``SpecSchedule`` (bit sets; seconds always 0) or, with ``every``, a
    ``ConstantDelaySchedule``."""

    minute: int = 0
    hour: int = 0
    dom: int = 0
    month: int = 0
    dow: int = 0
    zone: dt.tzinfo = UTC
    every: float = 0.0

    def next(self, after: dt.datetime) -> dt.datetime | None:
        """``Next``: the first activation strictly after ``after`` (aware), or None when
        there is none within five years."""
        if self.every:
            return after.replace(microsecond=0) + dt.timedelta(seconds=self.every)
        t = after.astimezone(self.zone).replace(microsecond=0) + dt.timedelta(seconds=1)
        added = False
        year_limit = t.year + 5
        while True:  # each pass is one ``goto WRAP``
            if t.year > year_limit:
                return None
            wrapped = False
            while not (1 << t.month) & self.month:
                if not added:
                    added = True
                    t = t.replace(day=1, hour=0, minute=0, second=0)
                t = _add_month(t)
                if t.month == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not self._day_matches(t):
                if not added:
                    added = True
                    t = t.replace(hour=0, minute=0, second=0)
                t = t + dt.timedelta(days=1)  # AddDate: the wall clock's next day
                if t.day == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not (1 << t.hour) & self.hour:
                if not added:
                    added = True
                    t = t.replace(minute=0, second=0)
                t = _wall(t + dt.timedelta(hours=1), self.zone)
                if t.hour == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not (1 << t.minute) & self.minute:
                if not added:
                    added = True
                    t = t.replace(second=0)
                t = _wall(t + dt.timedelta(minutes=1), self.zone)
                if t.minute == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            while t.second != 0:
                if not added:
                    added = True
                t = _wall(t + dt.timedelta(seconds=1), self.zone)
                if t.second == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            return t.astimezone(after.tzinfo)

    def _day_matches(self, t: dt.datetime) -> bool:
        dom = bool((1 << t.day) & self.dom)
        dow = bool((1 << ((t.weekday() + 1) % 7)) & self.dow)
        if self.dom & STAR_BIT or self.dow & STAR_BIT:
            return dom and dow
        return dom or dow


def _wall(t: dt.datetime, zone: dt.tzinfo) -> dt.datetime:
    """Go's ``Time.Add``: elapsed time, read back on the zone's wall clock."""
    return t.astimezone(UTC).astimezone(zone)


def _add_month(t: dt.datetime) -> dt.datetime:
    year, month = (t.year + 1, 1) if t.month == 12 else (t.year, t.month + 1)
    return t.replace(year=year, month=month)


# parser.go parseDescriptor's bit sets are those of these fields ("*" carries starBit)
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def parse_standard(spec: str, default_zone: str | None = None) -> Schedule:
    """``cron.ParseStandard`` (with the controller's ``formatSchedule``: a ``timeZone`` is
    the ``TZ=`` of a schedule without one)."""
    zone: dt.tzinfo = UTC
    name = default_zone
    if spec.startswith(("TZ=", "CRON_TZ=")):
        head, _, spec = spec.partition(" ")
        name = head.split("=", 1)[1]
        spec = spec.strip()
    if name and name != "UTC":
        try:
            zone = zoneinfo.ZoneInfo(name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError) as err:
            raise ScheduleError(f"unknown time zone {name}") from err
    if spec.startswith("@every "):
        seconds = int(parse_duration(spec[len("@every "):]))
        return Schedule(zone=zone, every=float(max(seconds, 1)))
    fields = _DESCRIPTORS.get(spec, spec).split()
    if len(fields) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}")
    minute, hour, dom, month, dow = (
        _field(text, low, high, names) for text, (low, high, names) in zip(
            fields, _BOUNDS, strict=True))
    return Schedule(minute=minute, hour=hour, dom=dom, month=month, dow=dow, zone=zone)
