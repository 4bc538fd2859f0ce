"""The events.k8s.io recorder (client-go v0.32.0 ``tools/events``, event_broadcaster.go):
series written on the second occurrence, refreshed every 30 minutes, finished after 6 idle
minutes, no per-object rate limit; driven by a clock and timer the test moves."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from setpoint.client import Client, Kind
from setpoint.runtime import _series_events
from setpoint.runtime._series_events import SeriesEventRecorder
from tests.waiting import quiet_period, wait_for

EVENT = Kind("events.k8s.io/v1", "Event")
OBJECTS = 200
MINUTE = 60.0


class _ManualTimer:
    """A clock and a sleep that only move when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeping: list[tuple[float, float, asyncio.Future[None]]] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.sleeping.append((self.now + delay, delay, future))
        await future

    def delays(self) -> list[float]:
        return sorted(delay for _, delay, _ in self.sleeping)

    def advance(self, seconds: float) -> None:
        self.now += seconds
        due = [s for s in self.sleeping if s[0] <= self.now]
        self.sleeping = [s for s in self.sleeping if s[0] > self.now]
        for _, _, future in due:
            future.set_result(None)


class _CountedSeries(_series_events._Series):
    """A cached event that counts how often anything reads it."""

    reads = 0

    def __getattribute__(self, name: str) -> Any:
        if not name.startswith("__"):
            _CountedSeries.reads += 1
        return super().__getattribute__(name)


def _config_map(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"flushed-{i}", "namespace": "default", "uid": f"uid-{i}"}}


async def _mine(client: Client, controller: str) -> list[dict[str, Any]]:
    items = (await client.list(EVENT, namespace="default")).items
    return [e for e in items if e.get("reportingController") == controller]


async def _series_count(client: Client, controller: str) -> int | None:
    found = await _mine(client, controller)
    assert len(found) == 1
    return (found[0].get("series") or {}).get("count")


async def test_a_series_is_written_on_its_second_event_then_every_30_minutes(
        client: Client) -> None:
    """client-go v0.32.0 tools/events/event_broadcaster.go: ``recordToSink`` writes the
    second occurrence of an event at once (its cached event gets ``Series{Count: 2}``) and
    only counts later ones in memory (``Series.Count++``, ``return nil``: no write);
    ``StartRecordingToSinkWithContext`` runs ``refreshExistingEventSeries`` every
    ``refreshTime`` (30 minutes), which writes every cached series' count, and
    ``finishSeries`` every ``finishTime`` (6 minutes), which leaves a series observed within
    the last 6 minutes alone."""
    timer = _ManualTimer()
    recorder = SeriesEventRecorder(client, reporting_controller="series-refresh",
                                   clock=timer.clock, sleep=timer.sleep)
    await recorder.start()
    try:
        # wait.UntilWithContext: each loop runs once at start, then sleeps its period
        await wait_for(lambda: timer.delays() == [6 * MINUTE, 30 * MINUTE])
        pod = _config_map(1)
        for _ in range(3):
            recorder.warning(pod, "FailedScheduling", "no nodes")

        async def count_is(n: int) -> bool:
            return await _series_count(client, "series-refresh") == n

        await wait_for(lambda: count_is(2))
        for minute in range(1, 30):  # a repeat every 5 minutes: never idle for 6
            timer.advance(MINUTE)
            if minute % 5 == 0:
                recorder.warning(pod, "FailedScheduling", "no nodes")
            await wait_for(lambda: len(timer.sleeping) == 2)  # each due loop ran and slept
        await quiet_period()
        assert await _series_count(client, "series-refresh") == 2  # 8 counted in memory

        timer.advance(MINUTE)  # minute 30: the refresh
        await wait_for(lambda: count_is(8))
    finally:
        await recorder.stop()


async def test_an_idle_series_is_finished_with_its_count_and_forgotten(client: Client) -> None:
    """client-go v0.32.0 tools/events/event_broadcaster.go ``finishSeries`` (every
    ``finishTime``, 6 minutes): a series whose ``LastObservedTime`` is more than 6 minutes
    old is written (its final count) and deleted from ``eventCache``, so the next such
    event is a new Event; a single event older than 6 minutes is just forgotten."""
    timer = _ManualTimer()
    recorder = SeriesEventRecorder(client, reporting_controller="series-finish",
                                   clock=timer.clock, sleep=timer.sleep)
    await recorder.start()
    try:
        await wait_for(lambda: len(timer.sleeping) == 2)
        pod = _config_map(2)
        for _ in range(4):
            recorder.normal(pod, "Seen", "seen")

        async def counts() -> list[int | None]:
            return sorted(((e.get("series") or {}).get("count") or 0)
                          for e in await _mine(client, "series-finish"))

        await wait_for(lambda: _is(counts(), [2]))
        timer.advance(6 * MINUTE)  # idle exactly 6 minutes: not before the cutoff
        await wait_for(lambda: len(timer.sleeping) == 2)
        await quiet_period()
        assert await counts() == [2]
        assert "cached=1" in repr(recorder)

        timer.advance(6 * MINUTE)  # idle 12 minutes: finished
        await wait_for(lambda: _is(counts(), [4]))
        await wait_for(lambda: "cached=0" in repr(recorder))
        recorder.normal(pod, "Seen", "seen")  # forgotten: a new Event
        await wait_for(lambda: _is(counts(), [0, 4]))
    finally:
        await recorder.stop()


async def _is(value: Any, expected: Any) -> bool:
    return bool(await value == expected)


async def test_a_deleted_series_event_is_created_again_by_the_refresh(client: Client) -> None:
    """client-go v0.32.0 tools/events/event_broadcaster.go ``recordEvent``: a series' PATCH
    that finds no Event (``IsKeyNotFoundError``) creates it, with its series."""
    timer = _ManualTimer()
    recorder = SeriesEventRecorder(client, reporting_controller="series-recreate",
                                   clock=timer.clock, sleep=timer.sleep)
    await recorder.start()
    try:
        pod = _config_map(3)
        for _ in range(2):
            recorder.normal(pod, "Seen", "seen")

        async def count_is(n: int) -> bool:
            found = await _mine(client, "series-recreate")
            return len(found) == 1 and (found[0].get("series") or {}).get("count") == n

        await wait_for(lambda: count_is(2))
        name = (await _mine(client, "series-recreate"))[0]["metadata"]["name"]
        await client.delete(EVENT, name, namespace="default")
        recorder.normal(pod, "Seen", "seen")
        await recorder.refresh()
        found = await _mine(client, "series-recreate")
        assert [(e["metadata"]["name"], e["series"]["count"]) for e in found] == [(name, 3)]
    finally:
        await recorder.stop()


async def test_no_per_object_rate_limit(client: Client) -> None:
    """client-go v0.32.0 tools/events (event_recorder.go ``eventf``, event_broadcaster.go
    ``recordToSink``) has no spam filter: 30 distinct events about one object at one
    instant are 30 Events (tools/record's ``EventSourceObjectSpamFilter`` would keep 25)."""
    timer = _ManualTimer()
    recorder = SeriesEventRecorder(client, reporting_controller="no-spam-filter",
                                   clock=timer.clock, sleep=timer.sleep)
    await recorder.start()
    try:
        for i in range(30):
            recorder.warning(_config_map(4), f"Reason{i}", "one of many")

        async def all_written() -> bool:
            return len(await _mine(client, "no-spam-filter")) == 30

        await wait_for(all_written)
        assert recorder.dropped == 0
    finally:
        await recorder.stop()


async def test_refresh_and_finish_cost_the_series_and_the_idle_not_every_event_kept(
        client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """client-go keeps every distinct event for 6 minutes (``eventBroadcasterImpl
    .eventCache``); a controller of 10,000 pods keeps tens of thousands. The refresh writes
    the series among them and the finish the ones gone idle; reading every event kept each
    time made their cost grow with the pods."""
    monkeypatch.setattr(_series_events, "_Series", _CountedSeries)
    timer = _ManualTimer()
    recorder = SeriesEventRecorder(client, reporting_controller="flush-cost",
                                   clock=timer.clock, sleep=timer.sleep)
    try:
        for i in range(OBJECTS):
            recorder.normal(_config_map(i), "Seen", "seen once")
        await recorder.start()

        async def created() -> bool:
            return len(await _mine(client, "flush-cost")) == OBJECTS

        await wait_for(created)
        timer.now += 1.0
        for _ in range(3):
            recorder.normal(_config_map(7), "Seen", "seen once")
        await wait_for(lambda: recorder._queue.empty())
        _CountedSeries.reads = 0
        await recorder.refresh()
        await recorder.finish()
        assert _CountedSeries.reads < 20  # the one series and the oldest event, not all 200

        seventh = [e for e in await _mine(client, "flush-cost")
                   if e["regarding"]["name"] == "flushed-7"]
        assert [e["series"]["count"] for e in seventh] == [4]

        timer.now += recorder.series_idle + 1  # every event idle: forgotten
        await recorder.finish()
        assert "cached=0" in repr(recorder)
    finally:
        await recorder.stop()


async def test_a_repeat_is_the_same_object_version_and_reason_whatever_its_note(
        client: Client) -> None:
    """client-go's ``getKey`` (k8s.io/client-go/tools/events/event_broadcaster.go, v0.32.0)
    finds the isomorphic event of ``recordToSink`` by type, action, reason, reporting
    controller and instance and the whole ``regarding`` and ``related`` references, the
    resourceVersion included, never by the note: a second event about the same object at
    the same version with another note patches the first one's series (count 2, the
    first note kept), and one about a newer version of the object is a new Event. The
    kube-scheduler's FailedScheduling repeats are such events."""
    recorder = SeriesEventRecorder(client, reporting_controller="repeat-key")
    def pod(version: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "waiting", "namespace": "default", "uid": "uid-waiting",
                             "resourceVersion": version}}


    await recorder.start()
    try:
        recorder.warning(pod("5"), "FailedScheduling",
                         "0/3 nodes are available: 3 Too many pods.")
        await wait_for(lambda: recorder._queue.empty())
        recorder.warning(pod("5"), "FailedScheduling",
                         "0/3 nodes are available: 2 Too many pods.")
        recorder.warning(pod("6"), "FailedScheduling",
                         "0/3 nodes are available: 1 Too many pods.")

        async def mine() -> list[dict[str, Any]] | None:
            items = (await client.list(EVENT, namespace="default")).items
            found = sorted((e for e in items if e.get("reportingController") == "repeat-key"),
                           key=lambda e: e["regarding"]["resourceVersion"])
            done = len(found) == 2 and (found[0].get("series") or {}).get("count") == 2
            return found if done else None

        first, second = await wait_for(mine)
        assert first["regarding"]["resourceVersion"] == "5"
        assert first["note"] == "0/3 nodes are available: 3 Too many pods."
        assert second["regarding"]["resourceVersion"] == "6" and not second.get("series")
        assert second["note"] == "0/3 nodes are available: 1 Too many pods."
    finally:
        await recorder.stop()
