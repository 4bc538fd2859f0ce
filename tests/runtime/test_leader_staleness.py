"""A leader that could not renew within its renew deadline (paused by SIGSTOP, or cut
off) checks the lease before it writes, and stops leading if another holds it: client-go's
leaderelection (``renew``: a leader that cannot renew within ``RenewDeadline`` stops
leading; ``OnStoppedLeading``). Clocks are injected so the pause is exact."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

from setpoint.client import Client, Kind, NotFoundError, RequestRecord
from setpoint.cluster import RunningCluster
from setpoint.runtime import Context, Controller
from setpoint.runtime._cache import Cache
from setpoint.runtime._leaderelection import (
    LEASE,
    LeaderElectionConfig,
    LeaderElectionLost,
    LeaderElector,
)
from setpoint.runtime._writer import Writer
from tests.runtime.conftest import CONFIGMAP, WIDGET, RequestLog, make_manager, widget
from tests.waiting import quiet_period, wait_for

# real sleeps of the renew loop never end during a test: only the injected clocks move
PATIENT = LeaderElectionConfig(name="stale", namespace="default", lease_duration=1500.0,
                               renew_deadline=1000.0, retry_period=500.0,
                               release_on_cancel=False)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}, "data": {"k": "v"}}


@pytest.fixture
async def leader_a(client: Client) -> AsyncIterator[tuple[LeaderElector, Clock]]:
    clock = Clock()
    elector = LeaderElector(client, replace(PATIENT, identity="a"),
                            clock=clock)
    task = asyncio.create_task(elector.run())
    await asyncio.wait_for(elector.elected.wait(), 10)
    yield elector, clock
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def lease_requests(client: Client) -> list[str]:
    seen: list[str] = []

    def record(r: RequestRecord) -> None:
        if "/leases" in r.path:
            seen.append(r.method)
    client.transport.on_request = record
    return seen


async def test_a_paused_leader_that_lost_the_lease_does_not_write(
        client: Client, leader_a: tuple[LeaderElector, Clock]) -> None:
    a, a_clock = leader_a
    writer = Writer(client, Cache(), {}, "a")
    writer.leading = a.check_leading
    # b sees a's lease, then (on its own clock) waits it out and takes over while a sleeps
    b_clock = Clock()
    b = LeaderElector(client, replace(PATIENT, identity="b"), clock=b_clock)
    assert not await b.try_acquire_or_renew()
    b_clock.now += PATIENT.lease_duration + 1
    assert await b.try_acquire_or_renew()

    a_clock.now += PATIENT.renew_deadline + 1  # a wakes up past its renew deadline
    # its renew loop has not run yet: it still believes it leads (read into a local, or
    # mypy would take a.leader as True for good and the `not a.leader` below as unreachable)
    believed = a.leader
    assert believed
    with pytest.raises(LeaderElectionLost):
        await writer.create_or_update(configmap("stale-write"))
    assert not a.leader
    with pytest.raises(NotFoundError):
        await client.get(CONFIGMAP, "stale-write", namespace="default")
    lease = await client.get(LEASE, "stale", namespace="default")
    assert lease["spec"]["holderIdentity"] == "b"


async def test_a_leader_checks_the_lease_only_once_its_renew_deadline_passed(
        client: Client, leader_a: tuple[LeaderElector, Clock]) -> None:
    a, a_clock = leader_a
    writer = Writer(client, Cache(), {}, "a")
    writer.leading = a.check_leading
    requests = lease_requests(client)
    await writer.create_or_update(configmap("fresh"))
    assert requests == []  # within the deadline: leadership is certain without asking

    a_clock.now += PATIENT.renew_deadline + 1  # paused, but nobody took over
    await asyncio.gather(*(writer.create_or_update(configmap(f"late-{i}")) for i in range(3)))
    assert requests == ["PUT"]  # one renewal for every write that waited on it
    assert a.leader


async def test_a_release_racing_the_leaders_own_late_renewal_still_releases(
        leader_a: tuple[LeaderElector, Clock], client: Client) -> None:
    """A renewal cut short by the stop can land after the leader last read the lease, so
    its release (an update at the resourceVersion it knew) conflicts. The lease is still
    its own: it reads it again and releases it, rather than leave it held for a whole
    lease duration (seen as a 409 ``lease_release_failed`` under load)."""
    elector, _ = leader_a
    lease = await client.get(LEASE, "stale", namespace="default")
    renewed = {**lease, "spec": {**lease["spec"], "renewTime": "2030-01-01T00:00:00.000000Z"}}
    await client.update(renewed)  # the late renewal: still "a", a newer resourceVersion
    assert await elector.release()
    released = await client.get(LEASE, "stale", namespace="default")
    assert released["spec"]["holderIdentity"] == ""


async def test_a_release_leaves_a_lease_someone_else_took(
        leader_a: tuple[LeaderElector, Clock], client: Client) -> None:
    elector, _ = leader_a
    lease = await client.get(LEASE, "stale", namespace="default")
    await client.update({**lease, "spec": {**lease["spec"], "holderIdentity": "b"}})
    assert not await elector.release()
    taken = await client.get(LEASE, "stale", namespace="default")
    assert taken["spec"]["holderIdentity"] == "b"


EVENT = Kind("events.k8s.io/v1", "Event")


@pytest.mark.usefixtures("widgets_crd")
async def test_a_stale_leaders_raw_client_writes_and_events_are_refused_too(
        cluster: RunningCluster, client: Client) -> None:
    """A reconcile's own writes through ``ctx.client`` and the events it records go through
    the lease check the writer's writes go through: a leader paused past its renew deadline
    whose lease another took sends none of them (client-go's elector stops a leader that
    cannot renew within RenewDeadline; its writes stop with it)."""
    refused: list[BaseException] = []
    ctrl = Controller.for_(WIDGET, name="raw-writer")

    @ctrl.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        ctx.events.normal("Seen", f"saw {name}")
        try:
            await ctx.client.create(configmap(f"raw-{name}"))
        except LeaderElectionLost as exc:
            refused.append(exc)
            raise

    requests = RequestLog()
    manager = make_manager(cluster, [ctrl], requests, leader_election=True,
                           leader_election_id="stale", identity="a",
                           lease_duration=PATIENT.lease_duration,
                           renew_deadline=PATIENT.renew_deadline,
                           retry_period=PATIENT.retry_period)
    async with manager.running():
        await wait_for(lambda: manager.leader)
        await client.create(widget("before"))

        async def written() -> bool:
            events = await client.list(EVENT, namespace="default")
            return (await configmap_exists(client, "raw-before")) and any(
                e["regarding"].get("name") == "before" for e in events)

        await wait_for(written)

        # a is paused past its renew deadline (its renew loop asleep) while b takes over
        elector = manager.elector
        assert elector is not None
        elector._renewed_at -= PATIENT.renew_deadline + 1
        lease = await client.get(LEASE, "stale", namespace="default")
        await client.update({**lease, "spec": {**lease["spec"], "holderIdentity": "b"}})
        writes_before = len(requests.writes())

        await client.create(widget("after"))
        await wait_for(lambda: len(refused) >= 1)
        await quiet_period()
        assert not await configmap_exists(client, "raw-after")
        events = await client.list(EVENT, namespace="default")
        assert not [e for e in events if e["regarding"].get("name") == "after"]
        # nothing but lease reads and renewals was sent
        assert {r.path.split("/")[-2] for r in requests.writes()[writes_before:]} <= {"leases"}
        assert not manager.leader


async def configmap_exists(client: Client, name: str) -> bool:
    try:
        await client.get(CONFIGMAP, name, namespace="default")
    except NotFoundError:
        return False
    return True


async def test_a_candidate_counts_the_lease_duration_from_when_its_read_answered(
        client: Client, leader_a: tuple[LeaderElector, Clock]) -> None:
    """client-go's ``tryAcquireOrRenew`` records ``observedTime`` when ``Lock.Get`` has
    answered (``setObservedRecord``), not when the attempt began: a renewal that lands
    while the read is in flight is seen with the read's answer, and the whole lease
    duration counts from then (found by the flaky-test hunt: a successor took over
    2.96 s after a renewal with a 3 s lease, its read having waited on a loaded machine)."""
    b_clock = Clock()
    b = LeaderElector(client, replace(PATIENT, identity="b"), clock=b_clock)
    read_takes = 100.0  # b's clock moves while its read of the lease is in flight

    def slow_lease_read(record: RequestRecord) -> None:
        if "/leases" in record.path and record.method == "GET":
            b_clock.now += read_takes
    client.transport.on_request = slow_lease_read
    try:
        assert not await b.try_acquire_or_renew()   # sees a's lease when its read answers
    finally:
        client.transport.on_request = None
    # past a lease duration from when the attempt began, not from when the read answered
    b_clock.now += PATIENT.lease_duration - read_takes + 1
    assert not await b.try_acquire_or_renew()
    lease = await client.get(LEASE, "stale", namespace="default")
    assert lease["spec"]["holderIdentity"] == "a"
    b_clock.now += read_takes
    assert await b.try_acquire_or_renew()
