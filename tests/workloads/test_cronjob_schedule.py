"""The CronJob controller's schedule arithmetic: robfig/cron/v3 spec.go ``SpecSchedule.Next``
(day of month OR day of week unless one is ``*``; steps; names; descriptors; ``TZ=``) and
pkg/controller/cronjob/utils.go ``mostRecentScheduleTime`` (the most recent missed time, the
estimate of how many were missed, the starting deadline)."""

from __future__ import annotations

import datetime as dt

import pytest

from setpoint.workloads.controllers.cronjob import most_recent_schedule_time
from setpoint.workloads.controllers.cronschedule import parse_standard

UTC = dt.UTC
NOW = dt.datetime(2026, 11, 27, 6, 39, 30, tzinfo=UTC)  # a Friday


@pytest.mark.parametrize(("spec", "first", "second"), [
    ("* * * * *", "2026-11-27T06:40:00", "2026-11-27T06:41:00"),
    ("*/5 * * * *", "2026-11-27T06:40:00", "2026-11-27T06:45:00"),
    ("@yearly", "2027-01-01T00:00:00", "2028-01-01T00:00:00"),
    ("30 6-16/4 * * mon-fri", "2026-11-27T10:30:00", "2026-11-27T14:30:00"),
    ("0 0 13 * 5", "2026-12-04T00:00:00", "2026-12-11T00:00:00"),  # the 13th or a Friday
    ("0 0 13 * *", "2026-12-13T00:00:00", "2027-01-13T00:00:00"),
    ("TZ=Europe/Berlin 0 9 * * *", "2026-11-27T08:00:00", "2026-11-28T08:00:00"),
    ("@every 90s", "2026-11-27T06:41:00", "2026-11-27T06:42:30"),
])
def test_next(spec: str, first: str, second: str) -> None:
    schedule = parse_standard(spec)
    one = schedule.next(NOW)
    assert one is not None
    two = schedule.next(one)
    assert (one.isoformat(), two.isoformat() if two else None) == (
        first + "+00:00", second + "+00:00")


def test_time_zone_field_is_the_schedules_zone() -> None:
    assert parse_standard("0 9 * * *", "Asia/Tokyo").next(NOW) == dt.datetime(
        2026, 11, 28, 0, 0, tzinfo=UTC)


def test_impossible_date_has_no_next() -> None:
    assert parse_standard("59 23 31 2 *").next(NOW) is None


def test_most_recent_missed_time_and_deadline() -> None:
    cj: dict[str, dict[str, object]] = {
        "metadata": {"creationTimestamp": "2026-11-27T05:00:10Z"},
        "spec": {"schedule": "*/10 * * * *"}, "status": {}}
    schedule = parse_standard("*/10 * * * *")
    _, recent, missed = most_recent_schedule_time(cj, NOW, schedule, True)
    assert (recent, missed) == (dt.datetime(2026, 11, 27, 6, 30, tzinfo=UTC), 9)
    cj["spec"]["startingDeadlineSeconds"] = 60  # nothing left since 06:38:30
    assert most_recent_schedule_time(cj, NOW, schedule, True)[1] is None
    cj["status"]["lastScheduleTime"] = "2026-11-27T06:30:00Z"
    assert most_recent_schedule_time(cj, NOW, schedule, False)[1:] == (None, 0)
