"""``kubectl top`` on process pods shows what their processes use, measured from /proc.

metrics-server serves metrics.k8s.io from what the kubelets measure (a container's CPU rate
and working set over a window: sigs.k8s.io/metrics-server pkg/storage/pod.go); the process
runtime measures each container's process group instead of a cgroup
(setpoint/workloads/kubelet/process/procusage.py).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from setpoint.client import NotFoundError
from setpoint.workloads.kubelet.metrics import POD_METRICS
from tests.waiting import wait_for
from tests.workloads.process.support import FAST, Kubectl, need, process_env
from tests.workloads.test_kubelet_support import pod, ready

MEASURED = dataclasses.replace(FAST, metrics_window=1.0)


def shell(name: str, script: str) -> dict[str, Any]:
    body = pod(name)
    body["spec"]["containers"] = [{"name": "main", "image": "busybox:1.36",
                                   "command": ["sh", "-c", script]}]
    return body


def millicores(usage: dict[str, str]) -> int:
    return int(usage["cpu"].removesuffix("n")) // 1_000_000


async def test_kubectl_top_shows_a_spinning_container_busy_and_a_sleeping_one_idle(
        tmp_path: Path) -> None:
    need("busybox", "busybox")
    async with process_env(tmp_path, MEASURED) as env:
        await env.run(shell("busy", "while :; do :; done"))
        await env.run(shell("idle", "exec sleep 3600"))
        for name in ("busy", "idle"):
            await env.until(name, ready)

        async def usage(name: str) -> dict[str, str] | None:
            try:
                metrics = await env.client.get(POD_METRICS, name, namespace="default")
            except NotFoundError:
                return None
            return dict(metrics["containers"][0]["usage"])

        async def spinning() -> dict[str, str] | None:
            found = await usage("busy")
            return found if found and millicores(found) >= 50 else None

        busy = await wait_for(spinning)
        idle = await wait_for(lambda: usage("idle"))
        assert millicores(idle) < 20 <= millicores(busy), (idle, busy)
        assert int(idle["memory"].removesuffix("Ki")) > 0

        kubectl = Kubectl(env, tmp_path, None)
        out = await kubectl.ok("top", "pod", "--no-headers")
        rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()}
        assert set(rows) == {"busy", "idle"}, out
        assert int(rows["busy"][0].removesuffix("m")) >= 20, out
        nodes = await kubectl.ok("top", "node", "--no-headers")
        assert "node-a" in nodes, nodes
