"""The events.k8s.io recorder's periodic flush: it writes what changed and forgets what went idle,
at a cost that does not grow with every event recorded in the last minutes."""

from __future__ import annotations

from typing import Any

import pytest

from setpoint.client import Client, Kind
from setpoint.runtime import _series_events
from setpoint.runtime._series_events import SeriesEventRecorder
from tests.waiting import wait_for

EVENT = Kind("events.k8s.io/v1", "Event")
OBJECTS = 200


class _CountedSeries(_series_events._Series):
    """A series that counts how often anything reads it."""

    reads = 0

    def __getattribute__(self, name: str) -> Any:
        if not name.startswith("__"):
            _CountedSeries.reads += 1
        return super().__getattribute__(name)


def _config_map(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"flushed-{i}", "namespace": "default", "uid": f"uid-{i}"}}


async def test_a_flush_costs_what_changed_not_every_series_kept(
        client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """client-go keeps a series per distinct event (k8s.io/client-go/tools/events,
    ``eventBroadcasterImpl.eventCache``): every 30 s it writes the counts that changed and
    after 6 idle minutes forgets the series. A controller of 10,000 pods keeps tens of
    thousands; the flush read all of them every time, so its cost grew with the pods times
    the length of the run."""
    monkeypatch.setattr(_series_events, "_Series", _CountedSeries)
    now = [1000.0]
    recorder = SeriesEventRecorder(client, reporting_controller="flush-cost",
                             clock=lambda: now[0])
    await recorder.start()
    try:
        for i in range(OBJECTS):
            recorder.normal(_config_map(i), "Seen", "seen once")

        async def created() -> bool:
            items = (await client.list(EVENT, namespace="default")).items
            mine = [e for e in items if e.get("reportingController") == "flush-cost"]
            return len(mine) == OBJECTS

        await wait_for(created)
        for _ in range(3):  # the second occurrence is written at once, the third by a flush
            recorder.normal(_config_map(7), "Seen", "seen once")
        await wait_for(lambda: recorder._queue.empty())
        now[0] += 1.0
        _CountedSeries.reads = 0
        await recorder.flush()
        assert _CountedSeries.reads < 20  # the one series that changed, not all 200

        items = (await client.list(EVENT, namespace="default")).items
        seventh = [e for e in items if e.get("reportingController") == "flush-cost"
                   and e["regarding"]["name"] == "flushed-7"]
        assert [e["series"]["count"] for e in seventh] == [4]

        now[0] += recorder.series_idle + 1  # every series idle: forgotten
        await recorder.flush()
        assert "series=0" in repr(recorder)
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
