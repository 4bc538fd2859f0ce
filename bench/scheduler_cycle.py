"""What one scheduling cycle costs on the workloads benchmark's cluster when it fails.

During the benchmark's rollout the 10 nodes are full (110 pods each) and every pod freed
requeues every unschedulable pod, so most cycles fail. This times ``schedule()`` for such a
pod, in-process and without a server, and the DefaultPreemption diagnosis inside it.

    .venv/bin/python bench/scheduler_cycle.py [--nodes 10]

It also times, in CPU time, a failed cycle after a pod was replaced on every node (as between
two cycles of a rollout) and a successful one (one slot free on the last node): a cycle
looks at every node, and the benchmark's nodes grow with its pods (one per 100).
"""

from __future__ import annotations

import argparse
import sys
import time
import timeit
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.workload_objects import REQUESTS
from setpoint.workloads.scheduler.affinity import AffinityState
from setpoint.workloads.scheduler.algorithm import _preemption, filter_node, schedule
from setpoint.workloads.scheduler.cache import SchedulerCache
from setpoint.workloads.scheduler.resources import host_ports, pod_requests

NODES, PODS_PER_NODE = 10, 110


def pod(name: str, node: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"priority": 0, "containers": [
        {"name": "app", "image": "x", "resources": {"requests": dict(REQUESTS)}}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "bench", "labels": {"app": name[:5]}},
            "spec": spec, "status": {"phase": "Running"}}


def full_cluster() -> SchedulerCache:
    cache = SchedulerCache()
    for n in range(NODES):
        name = f"node-{n + 1}"
        cache.set_node({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                        "status": {"allocatable": {"cpu": "4", "memory": "16Gi",
                                                   "pods": str(PODS_PER_NODE)}}})
        for p in range(PODS_PER_NODE):
            cache.observe_pod(pod(f"d-{n:03d}-{p}", name))
    return cache


def _churned_and_successful(cache: SchedulerCache, pending: dict[str, Any]) -> str:
    nodes, number = cache.node_infos(), 50

    def failed() -> None:
        for node in nodes:  # a pod replaced on every node since the last cycle
            node.add_pod(node.remove_pod(next(iter(node.pods))))  # type: ignore[arg-type]
        schedule(pending, cache.node_infos())

    churned = min(timeit.repeat(failed, number=number, repeat=5, timer=time.process_time))
    last = nodes[-1]
    freed = last.remove_pod(next(iter(last.pods)))
    fits = min(timeit.repeat(lambda: schedule(pending, cache.node_infos()), number=number,
                             repeat=5, timer=time.process_time))
    assert freed is not None
    last.add_pod(freed)
    return (f"CPU per cycle: failed after a pod was replaced on every node "
            f"{1000 * churned / number:.3f} ms, successful {1000 * fits / number:.3f} ms")


def main() -> None:
    global NODES
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=NODES)
    NODES = parser.parse_args().nodes
    cache = full_cluster()
    pending = pod("pending", None)
    nodes = cache.node_infos()
    decision = schedule(pending, nodes)
    assert decision.node is None, "the cluster should be full"
    print(f"message: {decision.message}")
    number = 200
    total = min(timeit.repeat(lambda: schedule(pending, nodes), number=number, repeat=5))
    request, ports = pod_requests(pending), host_ports(pending)
    affinity = AffinityState(pending, nodes, lambda _: {})
    statuses = {n.name: filter_node(pending, n, request=request, ports=ports,
                                    affinity=affinity) for n in nodes}
    preempt = min(timeit.repeat(lambda: _preemption(pending, nodes, statuses),  # type: ignore[arg-type]
                                number=number, repeat=5))
    print(f"failed schedule(): {1000 * total / number:.3f} ms per cycle, of which the "
          f"preemption diagnosis {1000 * preempt / number:.3f} ms "
          f"({100 * preempt / total:.0f}%), {NODES} nodes x {PODS_PER_NODE} pods")
    print(_churned_and_successful(cache, pending))


if __name__ == "__main__":
    main()
