"""Controllers and runnables added to a running Manager, as controller-runtime's
``Manager.Add`` after ``Start``.

controller-runtime (v0.24.1): pkg/manager/runnable_group.go ``runnableGroup.Add`` starts a
runnable added to a group that has started, and refuses one once ``StopAndWait`` began
(``errRunnableGroupStopped``); ``runnables.Add`` puts a controller in the leader election
group, started on election (pkg/manager/internal.go ``startLeaderElectionRunnables``) and
stopped with the others, and the manager stops on a runnable's error (``Start`` returns
what ``errChan`` carries). A controller waits for its sources to sync before its workers
run (pkg/internal/controller/controller.go ``startEventSourcesAndQueueLocked``), and the
informer cache starts an informer asked for on a started cache and waits for its sync
(pkg/cache/internal/informers.go ``Informers.Get``).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import aiohttp
import pytest

from setpoint.client import Client, ConflictError, Kind
from setpoint.cluster import RunningCluster
from setpoint.resources import generate_rbac
from setpoint.runtime import (
    Context,
    Controller,
    LeaderElectionLost,
    Manager,
    ManagerStoppingError,
    Request,
    manager_permissions,
)
from setpoint.runtime._objects import kind_key
from setpoint.runtime._startup import CacheSyncTimeout
from tests.runtime.conftest import CONFIGMAP, WIDGET, WIDGET_CRD, make_manager, widget
from tests.runtime.widgets import widget_controller
from tests.waiting import quiet_period, wait_for

pytestmark = pytest.mark.usefixtures("widgets_crd")

GADGET = Kind("bench.setpoint.dev/v1", "Gadget")
GADGET_CRD: dict[str, Any] = {
    **WIDGET_CRD,
    "metadata": {"name": "gadgets.bench.setpoint.dev"},
    "spec": {**WIDGET_CRD["spec"], "names": {
        "plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"}},
}
LEASE = Kind("coordination.k8s.io/v1", "Lease")
LEASE_DURATION = 3.0


async def _idle(_manager: Manager) -> None:
    """A runnable with nothing to do."""


def recording_controller(seen: list[str], name: str = "added",
                         gate: asyncio.Event | None = None,
                         finished: list[str] | None = None) -> Controller[Any]:
    """Reconciles Widgets, recording each name it is called with (then, with ``gate``,
    waits for it and records the name in ``finished``)."""
    ctrl = Controller.for_(WIDGET, name=name)

    @ctrl.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], obj: dict[str, Any]) -> None:
        seen.append(obj["metadata"]["name"])
        if gate is not None:
            await gate.wait()
            if finished is not None:
                finished.append(obj["metadata"]["name"])

    return ctrl


def reconciled(manager: Manager, controller: str) -> float:
    return manager.metrics.registry.get_sample_value(
        "controller_runtime_reconcile_total",
        {"controller": controller, "result": "success"}) or 0


async def readyz(port: int) -> int:
    async with aiohttp.ClientSession() as session, \
            session.get(f"http://127.0.0.1:{port}/readyz") as resp:
        return resp.status


async def test_a_controller_added_to_a_running_manager_reconciles_what_exists_and_comes(
        cluster: RunningCluster, client: Client) -> None:
    """Its kinds already cached (Widgets, by the first controller) are shared: the informer
    replays its objects to the added controller's handler, and later changes reach it."""
    manager = make_manager(cluster, [widget_controller()])
    seen: list[str] = []
    async with manager.running():
        await client.create(widget("before"))
        await wait_for(lambda: reconciled(manager, "widget") >= 1)
        manager.add(recording_controller(seen).reads(CONFIGMAP))
        # the replay, perhaps twice: the widget controller's status write may reach the
        # added handler after it too
        await wait_for(lambda: set(seen) == {"before"})
        await client.create(widget("after"))
        await wait_for(lambda: sorted(set(seen)) == ["after", "before"])
        # its metrics are the manager's, as those of a controller added before start
        await wait_for(lambda: reconciled(manager, "added") >= 2)
        assert manager.metrics.registry.get_sample_value(
            "controller_runtime_max_concurrent_reconciles", {"controller": "added"},
        ) == manager.settings.max_concurrent_reconciles
        # one informer per kind still: nothing was listed a second time
        assert set(manager.informers) == {kind_key(WIDGET), kind_key(CONFIGMAP)}
        assert [i.lists for i in manager.informers.values()] == [1, 1]


async def test_a_kind_new_to_the_cache_syncs_before_the_added_controllers_workers_run(
        cluster: RunningCluster, client: Client) -> None:
    """The added controller also watches Gadgets, a kind no informer has yet and whose CRD
    is not installed: the informer starts at once (and retries, as the server does not
    serve it), the controller's workers wait for it though Widgets are cached and queued,
    and the manager stays ready meanwhile (its webhooks and probes keep answering). Once
    the CRD is served the informer syncs and the workers run. Its RBAC bookkeeping
    (``manager_permissions``, what ``generate rbac`` and a refusal's message use) now
    includes what it declares."""
    manager = make_manager(cluster, [widget_controller()], http_port=0,
                           http_host="127.0.0.1")
    seen: list[str] = []
    added = recording_controller(seen).watches(
        GADGET, map_func=lambda obj: [Request(obj["metadata"]["namespace"], "w")])
    async with manager.running():
        assert manager.http_port is not None
        await client.create(widget("w"))
        manager.add(added)
        gadgets = manager.informers[kind_key(GADGET)]
        await wait_for(lambda: gadgets.last_error is not None)  # started: not served yet
        await quiet_period(1.0)
        assert seen == []
        assert gadgets.lists == 0  # not synced: it never listed
        assert manager.ready and await readyz(manager.http_port) == 200
        rules = [r for d in generate_rbac(manager_permissions(manager))
                 for r in d.get("rules") or ()]
        assert any("gadgets" in r.get("resources", ()) and "watch" in r["verbs"]
                   for r in rules)

        await client.create(GADGET_CRD)
        await wait_for(lambda: seen == ["w"], 30)
        assert gadgets.has_synced and gadgets.lists == 1
        await client.create({**widget("g"), "apiVersion": "bench.setpoint.dev/v1",
                             "kind": "Gadget"})
        await wait_for(lambda: seen == ["w", "w"])


async def test_an_added_controller_whose_caches_do_not_sync_stops_the_manager(
        cluster: RunningCluster) -> None:
    """As a controller whose sources do not sync in ``CacheSyncTimeout`` makes
    controller-runtime's manager return that error (and stop)."""
    manager = make_manager(cluster, [widget_controller()])
    await manager.start()
    try:
        # short only now: the start's own sync is not what this test is about
        manager.settings = replace(manager.settings, cache_sync_timeout=0.5)
        manager.add(recording_controller([]).reads(Kind("example.com/v1", "Missing")))
        await asyncio.wait_for(manager.wait(), 30)
    finally:
        await manager.stop()
    assert isinstance(manager.error, CacheSyncTimeout)
    assert "Missing" in str(manager.error)


async def test_a_runnable_added_to_a_running_manager_starts_at_once_and_stops_with_it(
        cluster: RunningCluster) -> None:
    manager = make_manager(cluster, [widget_controller()])
    running = asyncio.Event()
    cancelled: list[bool] = []

    async def heartbeat(_: Manager) -> None:
        running.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    await manager.start()
    try:
        manager.add_runnable(heartbeat)
        await asyncio.wait_for(running.wait(), 30)
    finally:
        await manager.stop()
    assert cancelled == [True]  # cancelled and awaited before stop returned


async def test_adding_once_the_stop_began_is_refused_with_the_reason(
        cluster: RunningCluster, client: Client) -> None:
    """controller-runtime's ``runnableGroup.Add`` returns ``errRunnableGroupStopped``
    during and after ``StopAndWait``. Here the stop waits for an in-flight reconcile of a
    controller that was itself added after start (it is awaited, not abandoned)."""
    seen: list[str] = []
    finished: list[str] = []
    gate = asyncio.Event()
    manager = make_manager(cluster, [widget_controller()], graceful_shutdown_timeout=60.0)
    await manager.start()
    stopping: asyncio.Task[None] | None = None
    try:
        manager.add(recording_controller(seen, gate=gate, finished=finished))
        await client.create(widget("held"))
        await wait_for(lambda: seen == ["held"])
        stopping = asyncio.ensure_future(manager.stop())
        await wait_for(lambda: not manager.ready)
        with pytest.raises(ManagerStoppingError, match=r"'late'.*stopping"):
            manager.add(recording_controller([], name="late"))
        with pytest.raises(ManagerStoppingError, match="stopping"):
            manager.add_runnable(_idle)
        await quiet_period(0.5)
        assert not stopping.done()  # the added controller's reconcile is waited for
        gate.set()
        await asyncio.wait_for(stopping, 30)
    finally:
        gate.set()
        await manager.stop()
    assert finished == ["held"]
    assert "late" not in [c.name for c in manager.controllers]
    with pytest.raises(ManagerStoppingError):
        manager.add(recording_controller([], name="after"))


def elected(cluster: RunningCluster, who: str) -> Manager:
    return make_manager(
        cluster, [widget_controller()], leader_election=True,
        leader_election_id="added-leader", identity=who, lease_duration=LEASE_DURATION,
        renew_deadline=LEASE_DURATION * 0.8, retry_period=0.1)


async def test_what_is_added_runs_only_while_leading(
        cluster: RunningCluster, client: Client) -> None:
    """Added to a standby replica, a controller and a runnable wait for its election (its
    informers warm meanwhile); added to the leader they run at once."""
    first, second = elected(cluster, "first"), elected(cluster, "second")
    seen_first: list[str] = []
    seen_second: list[str] = []
    ran: list[str] = []

    def runnable(who: str) -> Any:
        async def run(_: Manager) -> None:
            ran.append(who)
        return run

    await first.start()
    await wait_for(lambda: first.leader)
    await second.start()
    try:
        await client.create(widget("w"))
        second.add(recording_controller(seen_second))
        second.add_runnable(runnable("second"))
        first.add(recording_controller(seen_first))
        first.add_runnable(runnable("first"))
        # "w" at least once: the widget controller's status write is another event for the
        # added controller too when it lands after the add (a level-triggered second pass)
        await wait_for(lambda: "w" in seen_first and ran == ["first"])
        await quiet_period(1.0)
        assert seen_second == [] and ran == ["first"]
        assert second.informers[kind_key(WIDGET)].has_synced

        await first.stop()
        await wait_for(lambda: second.leader)
        await wait_for(lambda: "w" in seen_second and ran == ["first", "second"])
    finally:
        await second.stop()
        await first.stop()


async def test_an_added_controller_stops_when_leadership_is_lost(
        cluster: RunningCluster, client: Client) -> None:
    """controller-runtime's ``OnStoppedLeading`` ends the manager with no grace period: an
    added controller's reconcile in flight is cancelled with the others'."""
    manager = elected(cluster, "holder")
    seen: list[str] = []
    cancelled: list[str] = []
    gate = asyncio.Event()
    ctrl = Controller.for_(WIDGET, name="added")

    @ctrl.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], obj: dict[str, Any]) -> None:
        seen.append(obj["metadata"]["name"])
        try:
            await gate.wait()
        except asyncio.CancelledError:
            cancelled.append(obj["metadata"]["name"])
            raise

    await manager.start()
    try:
        await wait_for(lambda: manager.leader)
        manager.add(ctrl)
        await client.create(widget("held"))
        await wait_for(lambda: seen == ["held"])

        async def steal() -> bool:
            # another holds it: the renewals fail until the deadline (a renewal landing
            # between the read and the update is a 409: read again)
            lease = await client.get(LEASE, "added-leader", namespace="default")
            lease["spec"]["holderIdentity"] = "thief"
            try:
                await client.update(lease)
            except ConflictError:
                return False
            return True

        await wait_for(steal)
        await asyncio.wait_for(manager.wait(), 30)
    finally:
        gate.set()
        await manager.stop()
    assert isinstance(manager.error, LeaderElectionLost)
    assert cancelled == ["held"]
