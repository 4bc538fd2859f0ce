"""The workloads' program (setpoint/workloads/supervised.py) against an embedded server."""

from __future__ import annotations

import asyncio
import logging

import pytest

from setpoint.client import Client, RequestRecord, load_kubeconfig
from setpoint.cluster import serve
from setpoint.workloads import supervised
from setpoint.workloads.settings import WorkloadSettings
from tests.waiting import wait_for


async def test_each_node_is_registered_once(caplog: pytest.LogCaptureFixture) -> None:
    """The kubelets register their nodes while the caches fill, and the nodes area's own
    registration (the manager's runnable, once the caches synced) waits for that one
    instead of posting every node again to be refused with 409 AlreadyExists: one POST
    per node, as a kubelet's ``registerWithAPIServer`` makes once it succeeded
    (kubernetes/kubernetes pkg/kubelet/kubelet_node_status.go)."""
    caplog.set_level(logging.INFO, logger="setpoint.workloads.nodes")
    posts: list[RequestRecord] = []

    def record(r: RequestRecord) -> None:
        if r.method == "POST" and r.path == "/api/v1/nodes":
            posts.append(r)

    said: list[str] = []
    stop = asyncio.Event()
    async with serve() as running:
        client = Client(load_kubeconfig(running.kubeconfig), on_request=record)
        task = asyncio.ensure_future(supervised.run_with(
            client, WorkloadSettings(nodes=3), stop, said.append))
        try:
            await wait_for(lambda: "nodes-ready" in said or task.done())
            # the runnable says when its registration is over
            await wait_for(lambda: any("nodes_registered" in r.getMessage()
                                       for r in caplog.records))
        finally:
            stop.set()
            await task
    assert said[:2] == ["started", "nodes-ready"]
    assert sorted((r.code, r.attempt) for r in posts) == [(201, 0)] * 3
