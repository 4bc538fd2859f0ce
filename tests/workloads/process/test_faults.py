"""The testing kit's faults on real processes: a paused (SIGSTOP) server hangs, so its
liveness probe fails and the kubelet restarts it (pkg/kubelet/prober: a probe that times
out is a failure; a failed liveness probe kills the container)."""

from __future__ import annotations

import os
from pathlib import Path

from setpoint.client import Kind
from setpoint.workloads import faults, nodeops
from tests.waiting import wait_for
from tests.workloads.process.support import need, process_env, runtime_of
from tests.workloads.test_kubelet_support import pod, ready


def restarts(p: dict) -> int:  # type: ignore[type-arg]
    return sum(int(s.get("restartCount") or 0)
               for s in (p.get("status") or {}).get("containerStatuses") or ())


async def test_pausing_a_process_fails_its_liveness_probe_and_the_kubelet_restarts_it(
        tmp_path: Path) -> None:
    need("nginx", "nginx-light")
    async with process_env(tmp_path) as env:
        # the process runtime waits a pod's real grace period, and a paused nginx cannot
        # act on SIGTERM: without this the kill would wait the default 30 s for SIGKILL
        # (kuberuntime_container.go killContainer: the pod's terminationGracePeriodSeconds
        # bounds a liveness kill when the probe sets none)
        body = pod("web", terminationGracePeriodSeconds=1)
        body["spec"]["containers"] = [{
            "name": "nginx", "image": "nginx:1.27",
            "readinessProbe": {"httpGet": {"path": "/", "port": 80}, "periodSeconds": 1},
            "livenessProbe": {"httpGet": {"path": "/", "port": 80}, "periodSeconds": 1,
                              "timeoutSeconds": 1, "failureThreshold": 2}}]
        await env.run(body)
        live = await env.until("web", ready)
        assert restarts(live) == 0
        first = runtime_of(env).pids(live["metadata"]["uid"])["nginx"]
        await faults.pause_container(env.client, "web")
        await env.until("web", lambda p: restarts(p) >= 1, timeout=60)
        await faults.pause_container(env.client, "web", paused=False)
        again = await env.until("web", ready, timeout=60)
        assert runtime_of(env).pids(again["metadata"]["uid"])["nginx"] != first
        events = await env.client.list(Kind("v1", "Event"), namespace="default")
        messages = [e.get("message", "") for e in events.items
                    if e.get("reason") == "Unhealthy"]
        assert any(m.startswith("Liveness probe failed") for m in messages), messages


async def test_stopping_a_node_stops_its_processes(tmp_path: Path) -> None:
    """A node whose kubelet stops (the node fault: ``nodeops.set_not_ready``) takes its
    pods' processes with it, as a machine that goes down does."""
    need("busybox", "busybox")
    async with process_env(tmp_path) as env:
        body = pod("sleeper")
        body["spec"]["containers"] = [{"name": "main", "image": "busybox:1.36",
                                       "command": ["sleep", "3600"]}]
        await env.run(body)
        live = await env.until("sleeper", ready)
        group = runtime_of(env).pids(live["metadata"]["uid"])["main"]
        assert process_group_alive(group)

        await nodeops.set_not_ready(env.client, "node-a")

        await wait_for(lambda: not process_group_alive(group))


def process_group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True
