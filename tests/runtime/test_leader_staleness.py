"""A leader that could not renew within its renew deadline (paused by SIGSTOP, or cut
off) checks the lease before it writes, and stops leading if another holds it: client-go's
leaderelection (``renew``: a leader that cannot renew within ``RenewDeadline`` stops
leading; ``OnStoppedLeading``). Clocks are injected so the pause is exact."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from setpoint.client import Client, NotFoundError, RequestRecord
from setpoint.runtime._cache import Cache
from setpoint.runtime._leaderelection import (
    LEASE,
    LeaderElectionConfig,
    LeaderElectionLost,
    LeaderElector,
)
from setpoint.runtime._writer import Writer
from tests.runtime.conftest import CONFIGMAP

# real sleeps of the renew loop never end during a test: only the injected clocks move
PATIENT = {"name": "stale", "namespace": "default", "lease_duration": 1500.0,
           "renew_deadline": 1000.0, "retry_period": 500.0, "release_on_cancel": False}


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
    elector = LeaderElector(client, LeaderElectionConfig(identity="a", **PATIENT),
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
    b = LeaderElector(client, LeaderElectionConfig(identity="b", **PATIENT), clock=b_clock)
    assert not await b.try_acquire_or_renew()
    b_clock.now += PATIENT["lease_duration"] + 1
    assert await b.try_acquire_or_renew()

    a_clock.now += PATIENT["renew_deadline"] + 1  # a wakes up past its renew deadline
    assert a.leader  # its renew loop has not run yet: it still believes it leads
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

    a_clock.now += PATIENT["renew_deadline"] + 1  # paused, but nobody took over
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
