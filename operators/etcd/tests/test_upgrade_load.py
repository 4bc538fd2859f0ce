"""An upgrade from etcd 3.4 to 3.5 under a steady write load, on the process runtime.

A writer writes one new key after another through the client Service while the operator
upgrades the three members one at a time, the leader last. A write is retried only when
etcd says the leader changed or there is none (``etcdserver: leader changed``, ``no
leader``: server/etcdserver/errors.go, ``ErrLeaderChanged``, ``ErrNoLeader``), or when the
member the Service picked went away under it (its pod deleted for the upgrade: the
connection is refused or cut, or the member's gRPC server closes under its own HTTP gateway,
which answers gRPC's ``Unavailable``, "transport is closing"); any other failure fails the
test. Those retries are counted
and bounded, and every acknowledged write is read back afterwards from every member.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field

import pytest

from operators.etcd.etcdclient import EtcdClient, EtcdError, Unreachable
from operators.etcd.resource import EtcdCluster, EtcdClusterSpec
from operators.etcd.tests.test_real import (
    TIMEOUT,
    V34,
    V35,
    assert_every_member_has,
    client_endpoint,
    prefix_through_service,
    running,
    write,
)
from setpoint.client import Client
from setpoint.testing import OperatorRunner
from setpoint.testing.plugin import Waiter
from setpoint.testing.waiting import wait_for as wait_until

pytestmark = [pytest.mark.setpoint_runtime("process"), pytest.mark.timeout(300),
              pytest.mark.usefixtures("etcd_installed", "etcd_35_installed")]
LEADER_CHANGE = ("leader changed", "no leader")
UNAVAILABLE = 14
"""gRPC's codes.Unavailable: the gateway's connection to its member closed (the member stops)."""
FIRST_BACKOFF, MAX_BACKOFF = 0.05, 1.0
"""The writer's backoff between attempts of a refused write, doubling (etcd's clientv3
backs off the same way): the simulated client's behaviour, not a wait for a condition."""
MAX_RETRIED_WRITES = 12
"""Writes go one at a time, so a disruption (three member restarts, a few elections: the
leader is upgraded last, so one leadership change is planned) delays at most the one write
in flight. Counting writes rather than attempts keeps the bound independent of how long an
election takes on a loaded machine."""


@dataclass
class Writer:
    endpoint: str
    acknowledged: dict[str, str] = field(default_factory=dict)
    retries: Counter[str] = field(default_factory=Counter)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self) -> None:
        sequence = 0
        while not self.stop.is_set():
            sequence += 1
            key, value = f"/test/load/{sequence:06d}", f"v{sequence}"
            await self._put(key, value)
            self.acknowledged[key] = value

    async def _put(self, key: str, value: str) -> None:
        backoff, refused = FIRST_BACKOFF, False
        while True:
            try:
                async with EtcdClient(self.endpoint, timeout=5.0) as etcd:
                    await etcd.put(key, value)
                return
            except Unreachable:
                reason = "member-gone"
            except EtcdError as exc:
                if exc.code == UNAVAILABLE:
                    reason = "member-gone"
                elif any(text in str(exc) for text in LEADER_CHANGE):
                    reason = "leader-change"
                else:
                    raise
            if not refused:  # a write counts once, however many attempts it takes
                refused = True
                self.retries[reason] += 1
                if sum(self.retries.values()) > MAX_RETRIED_WRITES:
                    raise AssertionError(f"too many refused writes: {dict(self.retries)}")
            await asyncio.sleep(backoff)
            backoff = min(2 * backoff, MAX_BACKOFF)


async def test_an_upgrade_under_a_steady_write_load_loses_no_acknowledged_write(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=3, version=V34)))
    await wait_for(EtcdCluster, "e", running(3), timeout=TIMEOUT)
    await write(k8s, "e", {"/test/ready": "1"})  # the Service has a ready endpoint
    writer = Writer(await client_endpoint(k8s, "e"))
    task = asyncio.create_task(writer.run())
    await wait_until(lambda: len(writer.acknowledged) >= 20 or task.done(), timeout=30.0,
                     message="the writer is writing")

    await k8s.patch(EtcdCluster, "e", {"spec": {"version": V35}})
    try:
        await wait_for(EtcdCluster, "e", lambda c: (running(3)(c)
                       and c.status.current_version == V35) or task.done(),
                       timeout=TIMEOUT)
        written = len(writer.acknowledged)
        await wait_until(lambda: len(writer.acknowledged) >= written + 20 or task.done(),
                         timeout=30.0, message="the writer writes on the upgraded cluster")
    finally:
        writer.stop.set()
        await asyncio.wait_for(task, timeout=30.0)  # re-raises a failed write

    assert sum(writer.retries.values()) <= MAX_RETRIED_WRITES, writer.retries
    print(f"acknowledged {len(writer.acknowledged)} writes, retried {dict(writer.retries)}")
    await assert_every_member_has(k8s, "e", writer.acknowledged)
    stored = await prefix_through_service(k8s, "e", "/test/load/")
    assert stored == writer.acknowledged
