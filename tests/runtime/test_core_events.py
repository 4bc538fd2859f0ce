"""The event recorder writes core/v1 Events as client-go's ``tools/record`` does
(k8s.io/client-go/tools/record/event.go, events_cache.go; controller-runtime's
pkg/internal/recorder hands those recorders out): what ``kubectl describe`` shows under
*Events:*, repeats counted on one Event, similar events combined, a spam filter per object,
and nothing a reconcile waits for or fails on."""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from setpoint.client import Client, Kind, PatchType
from setpoint.client.errors import TransportError
from setpoint.cluster import RunningCluster, serve
from setpoint.runtime import Context, Controller, EventRecorder
from tests.conftest import kubectl_path
from tests.runtime.conftest import WIDGET, make_manager, widget
from tests.waiting import wait_for

EVENT = Kind("v1", "Event")


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[RunningCluster]:
    """The embedded cluster, its kubeconfig written where this test says (for kubectl)."""
    async with serve(kubeconfig=tmp_path / "kubeconfig") as running:
        yield running


class Spy:
    """The recorder's client, noting each write it makes (and failing some on request)."""

    def __init__(self, client: Client, transport_failures: int = 0) -> None:
        self.client = client
        self.calls: list[tuple[str, Any]] = []
        self.transport_failures = transport_failures

    async def create(self, body: dict[str, Any]) -> Any:
        self.calls.append(("create", body))
        if self.transport_failures:
            self.transport_failures -= 1
            raise TransportError("connection refused")
        return await self.client.create(body)

    async def patch(self, kind: Kind, name: str, body: dict[str, Any], *,
                    patch_type: PatchType, namespace: str) -> Any:
        self.calls.append(("patch", (patch_type, body)))
        return await self.client.patch(kind, name, body, patch_type=patch_type,
                                       namespace=namespace)


def config_map(name: str = "cm") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                         "resourceVersion": "7"}}


async def events_of(client: Client, component: str) -> list[dict[str, Any]]:
    items = (await client.list(EVENT, namespace="default")).items
    return [e for e in items if (e.get("source") or {}).get("component") == component]


async def test_an_operators_events_are_core_events_kubectl_describe_shows(
        cluster: RunningCluster, client: Client, widgets_crd: None, tmp_path: Path) -> None:
    """event.go ``makeEvent``: a core/v1 Event named ``<object>.<hex nanoseconds>``, its
    ``involvedObject`` the object's reference, ``source.component`` and
    ``reportingComponent`` the controller's name, ``count`` 1 and both timestamps set; a
    repeat patches ``count`` and ``lastTimestamp`` (events_cache.go ``eventObserve``).
    kubectl describe lists events by ``involvedObject`` on the core API."""
    ctrl = Controller.for_(WIDGET, name="noisy")

    @ctrl.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], obj: dict[str, Any]) -> None:
        for _ in range(3):
            ctx.events.normal("Configured", "widget configured")
        ctx.events.warning("Degraded", "one replica is missing")

    manager = make_manager(cluster, [ctrl])
    async with manager.running():
        created = await client.create(widget("w"))

        async def counted() -> list[dict[str, Any]] | None:
            mine = await events_of(client, "setpoint")
            return mine if sum(e.get("count", 0) for e in mine) >= 4 else None

        mine = await wait_for(counted)
    mine = await events_of(client, "setpoint")  # the stop wrote what was queued
    by_reason = {e["reason"]: e for e in mine}
    assert sorted(by_reason) == ["Configured", "Degraded"] and len(mine) == 2
    configured = by_reason["Configured"]
    uid = created["metadata"]["uid"]
    assert configured["involvedObject"] == {
        "apiVersion": "bench.setpoint.dev/v1", "kind": "Widget", "namespace": "default",
        "name": "w", "uid": uid, "resourceVersion": configured["involvedObject"][
            "resourceVersion"]}
    assert re.fullmatch(r"w\.[0-9a-f]+", configured["metadata"]["name"])
    assert configured["source"] == {"component": "setpoint"}
    assert configured["reportingComponent"] == "setpoint"
    assert configured["type"] == "Normal" and configured["message"] == "widget configured"
    assert configured["count"] >= 2 and configured["firstTimestamp"]
    assert configured["lastTimestamp"] >= configured["firstTimestamp"]
    assert by_reason["Degraded"]["type"] == "Warning"

    kubectl = [kubectl_path(), "--kubeconfig", str(cluster.kubeconfig),
               "--cache-dir", str(tmp_path / "kube-cache"), "-n", "default"]
    proc = await asyncio.create_subprocess_exec(
        *kubectl, "describe", "widgets.bench.setpoint.dev", "w",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "HOME": str(tmp_path)})
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    text = out.decode()
    events = text[text.index("Events:"):]
    assert re.search(r"Normal\s+Configured\s+.*\(x[23] over .*\)\s+setpoint\s+"
                     r"widget configured", events), events
    assert re.search(r"Warning\s+Degraded\s+.*setpoint\s+one replica is missing",
                     events), events


async def test_a_repeat_is_a_strategic_merge_patch_of_count_and_last_timestamp(
        client: Client) -> None:
    """events_cache.go ``eventObserve``: the same event again is the first one with
    ``count`` + 1, written by ``recordEvent`` as a strategic-merge patch of what changed
    (``count``, ``lastTimestamp``, ``message``); one deleted meanwhile is created again."""
    now = [1_700_000_000.0]
    spy = Spy(client)
    recorder = EventRecorder(spy, reporting_controller="repeats",  # type: ignore[arg-type]
                             clock=lambda: now[0])
    for _ in range(3):
        recorder.normal(config_map(), "Synced", "synced")
        now[0] += 1.0
    await recorder.flush()
    [event] = await events_of(client, "repeats")
    assert event["count"] == 3
    assert (event["firstTimestamp"], event["lastTimestamp"]) == (
        "2023-11-14T22:13:20Z", "2023-11-14T22:13:22Z")
    assert [c[0] for c in spy.calls] == ["create", "patch", "patch"]
    assert spy.calls[2][1] == (PatchType.STRATEGIC, {
        "count": 3, "lastTimestamp": "2023-11-14T22:13:22Z", "message": "synced"})

    await client.delete(EVENT, event["metadata"]["name"], namespace="default")
    recorder.normal(config_map(), "Synced", "synced")
    await recorder.flush()
    [again] = await events_of(client, "repeats")
    assert again["count"] == 4 and again["metadata"]["name"] == event["metadata"]["name"]


async def test_similar_events_are_combined_and_an_objects_events_rate_limited(
        client: Client) -> None:
    """events_cache.go: the 10th event of one object and reason within 10 minutes that
    differs only by message becomes ``(combined from similar events): ...``, and later ones
    count on it (``EventAggregate``); a source may write 25 events about an object, then
    one every 5 minutes (``EventSourceObjectSpamFilter``)."""
    now = [1_700_000_000.0]
    recorder = EventRecorder(client, reporting_controller="similar", clock=lambda: now[0])
    for i in range(12):
        recorder.warning(config_map("agg"), "BackOff", f"attempt {i}")
    await recorder.flush()
    events = await events_of(client, "similar")
    combined = [e for e in events if e["message"].startswith("(combined from")]
    assert len(events) == 10 and len(combined) == 1
    assert combined[0]["message"] == "(combined from similar events): attempt 11"
    assert combined[0]["count"] == 3

    for i in range(30):  # distinct reasons: not combined, each new
        recorder.normal(config_map("spam"), f"Step{i}", "done")
    await recorder.flush()
    spammed = [e for e in await events_of(client, "similar")
               if e["involvedObject"]["name"] == "spam"]
    assert len(spammed) == 25 and recorder.dropped == 5
    now[0] += 300.0  # one token back
    recorder.normal(config_map("spam"), "Later", "done")
    await recorder.flush()
    assert len([e for e in await events_of(client, "similar")
                if e["involvedObject"]["name"] == "spam"]) == 26


async def test_an_objects_warnings_are_not_silenced_by_its_normal_events(
        client: Client) -> None:
    """client-go v0.32.0 tools/record/events_cache.go ``getSpamKey``: the spam filter's
    bucket is per source, object and event type, so 25 Normal events about an object
    leave its Warnings their own 25."""
    now = [1_700_000_000.0]
    recorder = EventRecorder(client, reporting_controller="by-type", clock=lambda: now[0])
    for i in range(26):
        recorder.normal(config_map("typed"), f"Step{i}", "done")
    recorder.warning(config_map("typed"), "Failed", "broken")
    await recorder.flush()
    events = await events_of(client, "by-type")
    assert sorted(e["type"] for e in events) == ["Normal"] * 25 + ["Warning"]
    assert recorder.dropped == 1


async def test_recording_never_blocks_or_fails_the_caller(client: Client) -> None:
    """event.go: recording only queues (``ActionOrDrop`` on a queue of
    ``maxQueuedEvents``, dropped when full); an unsupported type is logged, not raised
    (``util.ValidateEventType``); ``recordToSink`` retries what did not reach the server,
    and gives up on what the server refused."""
    spy = Spy(client, transport_failures=2)
    recorder = EventRecorder(spy, reporting_controller="bounded",  # type: ignore[arg-type]
                             max_pending=4, senders=1, retry_sleep=0.01)
    for i in range(10):  # not started: nothing is written, the queue fills
        recorder.normal(config_map(f"q{i}"), "Queued", "queued")
    recorder.event(config_map(), "Info", "Odd", "not a type")
    assert recorder.dropped == 7
    await recorder.start()
    try:
        await wait_for(lambda: len([c for c in spy.calls if c[0] == "create"]) >= 6)
    finally:
        await recorder.stop()
    assert sorted(e["involvedObject"]["name"] for e in await events_of(client, "bounded")) \
        == ["q0", "q1", "q2", "q3"]

    refused = Spy(client)
    recorder = EventRecorder(refused, reporting_controller="refused")  # type: ignore[arg-type]
    recorder.normal({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "cm", "namespace": "missing"}}, "Lost", "no")
    await recorder.flush()  # no such namespace: refused once, not retried
    assert [c[0] for c in refused.calls] == ["create"] and recorder.dropped == 1



async def test_the_queue_bound_is_on_all_senders_together(
        client: Client, caplog: pytest.LogCaptureFixture) -> None:
    """event.go ``NewBroadcaster``: ``watch.NewLongQueueBroadcaster(maxQueuedEvents,
    DropIfChannelFull)``, one sink channel of 1000 that drops only when 1000 wait
    (apimachinery pkg/watch/mux.go ``distribute``). The recorder spreads its writes over
    senders (an object's events to one of them, in order); a share of the bound per sender
    dropped an object's events while the other senders' queues were empty."""
    recorder = EventRecorder(client, reporting_controller="shared-bound",
                             max_pending=8, senders=4)
    for i in range(8):  # one object: every event to the same sender
        recorder.normal(config_map("one"), "Queued", f"queued {i}")
    assert recorder.dropped == 0
    with caplog.at_level(logging.DEBUG, logger="setpoint.runtime._events"):
        for _ in range(3):
            recorder.normal(config_map("other"), "Queued", "one too many")
    assert recorder.dropped == 3
    # an overflow is said once (Go's distribute drops silently), not once per event
    assert [r.levelno for r in caplog.records if "event_dropped" in r.getMessage()] \
        == [logging.ERROR, logging.DEBUG, logging.DEBUG]
    await recorder.start()
    try:
        await recorder.flush()
    finally:
        await recorder.stop()
    assert sorted(e["message"] for e in await events_of(client, "shared-bound")) \
        == [f"queued {i}" for i in range(8)]
