"""The manager: probes and metrics on one port, graceful shutdown, leader election."""

from __future__ import annotations

import asyncio
import gc
import logging
from datetime import datetime
from typing import Any

import aiohttp
import pytest
from prometheus_client import Counter

from setpoint.client import Client, Kind
from setpoint.cluster import RunningCluster
from setpoint.runtime import Context, Controller, Manager, Result, metrics_registry
from tests.runtime.conftest import WIDGET, make_manager, widget
from tests.runtime.widgets import widget_controller
from tests.waiting import quiet_period, wait_for

pytestmark = pytest.mark.usefixtures("widgets_crd")

LEASE = Kind("coordination.k8s.io/v1", "Lease")


async def fetch(port: int, path: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, \
            session.get(f"http://127.0.0.1:{port}{path}") as resp:
        return resp.status, await resp.text()


async def test_probes_and_metrics_share_one_port(
        cluster: RunningCluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    manager = make_manager(cluster, [widget_controller()], http_port=0,
                           http_host="127.0.0.1")
    caplog.set_level(logging.INFO, logger="setpoint.runtime")
    async with manager.running():
        port = manager.http_port
        assert port
        # port 0 picks one: the log says which (`setpoint run --http-address 127.0.0.1:0`)
        assert f"probe_server_started address=127.0.0.1:{port} " in caplog.text
        assert await fetch(port, "/healthz") == (200, "ok")
        assert await fetch(port, "/readyz") == (200, "ok")
        await client.create(widget("w"))
        await wait_for(lambda: (manager.metrics.registry.get_sample_value(
            "controller_runtime_reconcile_total",
            {"controller": "widget", "result": "success"}) or 0) >= 1)
        status, text = await fetch(port, "/metrics")
        assert status == 200
        for name in ("controller_runtime_reconcile_total", "controller_runtime_reconcile_time_"
                     "seconds_bucket", "controller_runtime_reconcile_errors_total",
                     "workqueue_depth", "workqueue_adds_total",
                     "workqueue_queue_duration_seconds_bucket",
                     "workqueue_work_duration_seconds_bucket", "workqueue_retries_total",
                     "rest_client_requests_total"):
            assert name in text, name
        assert 'rest_client_requests_total{code="200",host=' in text
        assert 'method="PATCH"' in text


async def test_the_operators_own_metrics_are_served_beside_the_runtimes(
        cluster: RunningCluster) -> None:
    """controller-runtime serves what an operator registers in ``metrics.Registry`` on the
    manager's metrics endpoint (controller-runtime pkg/metrics/registry.go, pkg/metrics/
    server): here ``metrics_registry``, shared by every manager of the process."""
    counted = Counter("test_operator_things_done", "Things the test operator did",
                      ["widget"], registry=metrics_registry)
    try:
        counted.labels("w").inc(3)
        manager = make_manager(cluster, [widget_controller()], http_port=0,
                               http_host="127.0.0.1")
        async with manager.running():
            status, text = await fetch(manager.http_port or 0, "/metrics")
        assert status == 200
        assert 'test_operator_things_done_total{widget="w"} 3.0' in text
        assert "controller_runtime_reconcile_total" in text
    finally:
        metrics_registry.unregister(counted)


async def test_graceful_shutdown_finishes_the_reconcile_in_flight(
        cluster: RunningCluster, client: Client) -> None:
    started = asyncio.Event()
    release = asyncio.Event()
    finished: list[str] = []
    ctrl = Controller.for_(WIDGET, name="slow")

    @ctrl.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], obj: dict[str, Any]) -> Result:
        started.set()
        await release.wait()
        await ctx.patch_status({"ready": True})
        finished.append(obj["metadata"]["name"])
        return Result()

    manager = make_manager(cluster, [ctrl])
    await manager.start()
    await client.create(widget("w"))
    await asyncio.wait_for(started.wait(), 30)
    stopping = asyncio.create_task(manager.stop())
    await quiet_period()
    assert not stopping.done()           # waits for the reconcile
    assert not manager.ready
    release.set()
    await asyncio.wait_for(stopping, 30)
    assert finished == ["w"]
    w = await client.get(WIDGET, "w", namespace="default")
    assert w["status"]["ready"] is True  # its write went out before the client closed


async def test_shutdown_cancels_a_reconcile_that_outlives_the_timeout(
        cluster: RunningCluster, client: Client) -> None:
    started = asyncio.Event()
    cancelled: list[bool] = []
    ctrl = Controller.for_(WIDGET, name="stuck")

    @ctrl.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], obj: dict[str, Any]) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    manager = make_manager(cluster, [ctrl], graceful_shutdown_timeout=0.1)
    await manager.start()
    await client.create(widget("w"))
    await asyncio.wait_for(started.wait(), 30)
    await asyncio.wait_for(manager.stop(), 30)
    assert cancelled == [True]


def counting_controller(counts: dict[str, int], who: str) -> Controller[Any]:
    ctrl = Controller.for_(WIDGET, name="elected")

    @ctrl.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], obj: dict[str, Any]) -> None:
        counts[who] = counts.get(who, 0) + 1

    return ctrl


# Long enough that a loaded machine does not make a leader miss its renew deadline (or its
# release, which client-go bounds by the renew deadline) and short enough for a test that
# waits for a lease to expire.
LEASE_DURATION = 3.0


def elected_manager(cluster: RunningCluster, counts: dict[str, int], who: str) -> Manager:
    return make_manager(
        cluster, [counting_controller(counts, who)], leader_election=True,
        leader_election_id="widgets-leader", identity=who, lease_duration=LEASE_DURATION,
        renew_deadline=LEASE_DURATION * 0.8, retry_period=0.1)


def micro_time(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ")


async def test_only_the_leader_reconciles_and_a_successor_takes_over_on_release(
        cluster: RunningCluster, client: Client) -> None:
    counts: dict[str, int] = {}
    first = elected_manager(cluster, counts, "first")
    second = elected_manager(cluster, counts, "second")
    await first.start()
    await wait_for(lambda: first.leader)
    await second.start()
    try:
        await client.create(widget("w1"))
        await wait_for(lambda: counts.get("first") == 1)
        assert second.ready and not second.leader
        assert "second" not in counts
        lease = await client.get(LEASE, "widgets-leader", namespace="default")
        assert lease["spec"]["holderIdentity"] == "first"
        text = first.metrics.exposition().decode()
        assert 'leader_election_master_status{name="widgets-leader"} 1.0' in text

        await first.stop()
        lease = await client.get(LEASE, "widgets-leader", namespace="default")
        # released as client-go does: the holder cleared (or already the successor)
        assert lease["spec"].get("holderIdentity") in ("", None, "second")
        await wait_for(lambda: second.leader)
        # its warm queue held w1: reconciled on taking over, with no new event
        await wait_for(lambda: counts.get("second") == 1)
        await client.create(widget("w2"))
        await wait_for(lambda: counts.get("second") == 2)
        assert counts["first"] == 1
    finally:
        await second.stop()
        await first.stop()


async def test_a_successor_takes_over_when_the_leader_dies(
        cluster: RunningCluster, client: Client) -> None:
    counts: dict[str, int] = {}
    first = elected_manager(cluster, counts, "first")
    second = elected_manager(cluster, counts, "second")
    await first.start()
    await wait_for(lambda: first.leader)
    await second.start()
    try:
        await first.stop(graceful=False)     # a crash: the lease is not released
        lease = await client.get(LEASE, "widgets-leader", namespace="default")
        assert lease["spec"]["holderIdentity"] == "first"
        await wait_for(lambda: second.leader)
        taken = await client.get(LEASE, "widgets-leader", namespace="default")
        assert taken["spec"]["holderIdentity"] == "second"
        # it waited for the lease to expire: a whole lease duration after the last renewal
        waited = (micro_time(taken["spec"]["acquireTime"])
                  - micro_time(lease["spec"]["renewTime"])).total_seconds()
        assert waited >= LEASE_DURATION - 0.001  # MicroTime keeps microseconds
        await client.create(widget("w"))
        await wait_for(lambda: counts.get("second") == 1)
    finally:
        await second.stop()


async def test_events_are_recorded_and_aggregated(
        cluster: RunningCluster, client: Client) -> None:
    ctrl = Controller.for_(WIDGET, name="noisy")

    @ctrl.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], obj: dict[str, Any]) -> None:
        for _ in range(3):
            ctx.events.normal("Configured", "widget configured")

    manager = make_manager(cluster, [ctrl])
    async with manager.running():
        await client.create(widget("w"))

        async def event() -> dict[str, Any] | None:
            items = (await client.list(Kind("v1", "Event"), namespace="default")).items
            mine = [e for e in items if e.get("reportingComponent") == "setpoint"]
            return mine[0] if mine and mine[0].get("count", 0) >= 2 else None

        e = await wait_for(event)
        assert e["involvedObject"]["name"] == "w" and e["involvedObject"]["kind"] == "Widget"
        assert e["reason"] == "Configured" and e["type"] == "Normal"
        assert e["message"] == "widget configured" and e["source"]["component"] == "setpoint"
    # the stop wrote what was queued: one Event counting the three (client-go's eventObserve)
    items = (await client.list(Kind("v1", "Event"), namespace="default")).items
    mine = [e for e in items if e.get("reportingComponent") == "setpoint"]
    assert len(mine) == 1 and mine[0]["count"] == 3


async def test_events_queued_at_shutdown_are_all_written(client: Client) -> None:
    from setpoint.runtime._events import EventRecorder

    recorder = EventRecorder(client, reporting_controller="burst", senders=4)
    await recorder.start()
    for i in range(60):
        regarding = {"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": f"cm-{i}", "namespace": "default", "uid": f"u-{i}"}}
        recorder.normal(regarding, "Seen", f"object {i}")
    await recorder.stop()
    items = (await client.list(Kind("v1", "Event"), namespace="default")).items
    mine = sorted(e["involvedObject"]["name"] for e in items
                  if e.get("reportingComponent") == "burst")
    assert mine == sorted(f"cm-{i}" for i in range(60))
    assert recorder.dropped == 0


async def test_each_watched_kind_is_listed_and_watched_once(
        cluster: RunningCluster) -> None:
    """One informer per kind, run once: the informers the controllers ask for while the
    manager starts were run twice (each LIST and WATCH made twice, every event handled
    twice), as client-go's ``sharedInformerFactory.Start`` runs only the informers it has
    not started yet (k8s.io/client-go/informers/factory.go, ``startedInformers``)."""
    manager = make_manager(cluster, [widget_controller()])
    async with manager.running():
        informers = list(manager.informers.values())
        assert informers
        await wait_for(lambda: all(i.watches >= 1 for i in informers))
        await quiet_period()  # a second run of an informer would list and watch again
        assert [(i.lists, i.watches) for i in informers] == [(1, 1)] * len(informers)


async def test_readyz_fails_until_caches_sync(cluster: RunningCluster) -> None:
    ctrl = Controller.for_(Kind("example.com/v1", "Missing"), name="missing")

    @ctrl.reconcile
    async def reconcile(ctx: Context[Any], obj: Any) -> None:
        pass

    manager = make_manager(cluster, [ctrl], http_port=0, http_host="127.0.0.1",
                           cache_sync_timeout=0.3)
    with pytest.raises(TimeoutError):
        await manager.start()
    assert not manager.ready



async def test_a_running_manager_lets_a_reconciles_objects_die_young(
        cluster: RunningCluster) -> None:
    """``Manager.run`` (what ``setpoint run`` runs) sets the collector's young generation to
    10,000 while it runs the process and puts Python's thresholds back when it returns; a
    program that chose its own keeps them. Not a Kubernetes rule: the operator's own CPU
    (docs/benchmarks.md, Operators, eighth pass; the workloads' process does the same,
    tests/cli/test_start_gc.py)."""
    before = gc.get_threshold()
    try:
        for own, during in (((700, 10, 10), (10_000, 50, 10)),
                            ((5_000, 10, 10), (5_000, 10, 10))):
            gc.set_threshold(*own)
            manager = make_manager(cluster, [widget_controller()])
            running = asyncio.create_task(manager.run())
            await wait_for(lambda m=manager: m.ready)  # type: ignore[misc]
            assert gc.get_threshold() == during
            await manager.stop()
            await running
            assert gc.get_threshold() == own
    finally:
        gc.set_threshold(*before)
