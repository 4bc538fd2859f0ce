"""When a CronJob's schedule fires: github.com/robfig/cron/v3 ``Schedule.Next`` as
kube-controller-manager's CronJob controller uses it.

The grammar and its bit sets are setpoint.machinery.cronspec's (the server validates with
the same parser); this module walks spec.go's ``SpecSchedule.Next`` or constantdelay.go's
``@every``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import fields

from setpoint.machinery import cronspec
from setpoint.machinery.cronspec import STAR_BIT

UTC = dt.UTC


class ScheduleError(ValueError):
    """A schedule the controller cannot run (the server refuses such schedules first)."""


class Schedule(cronspec.CronSpec):
    """The parsed schedule with spec.go's ``Next``."""

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


def parse_standard(spec: str, default_zone: str | None = None) -> Schedule:
    """``cron.ParseStandard`` (with the controller's ``formatSchedule``: a ``timeZone`` is
    the ``TZ=`` of a schedule without one); CronError (a ValueError) where it fails."""
    if default_zone and not spec.startswith(("TZ=", "CRON_TZ=")):
        spec = f"TZ={default_zone} {spec}"
    parsed = cronspec.parse_standard(spec)
    return Schedule(**{f.name: getattr(parsed, f.name) for f in fields(parsed)})
