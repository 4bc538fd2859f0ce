"""The scheduling queue over the embedded cluster: a pod that fits nowhere waits for an event.

kube-scheduler (kubernetes/kubernetes 1.32) parks a pod whose cycle failed in
``unschedulablePods`` (pkg/scheduler/backend/queue/scheduling_queue.go) and moves it back
only for a cluster event one of its rejecting plugins registered, when that plugin's
QueueingHint says ``Queue``: NodeResourcesFit registers Node Add/Update and assigned Pod
Delete (pkg/scheduler/framework/plugins/noderesources/fit.go, ``EventsToRegister`` and
``isSchedulableAfterPodEvent``: any deleted scheduled pod may make room), not pod creation.
Its attempts are counted in ``scheduler_schedule_attempts_total{result,profile}`` and the
pods waiting in ``scheduler_pending_pods{queue}`` (pkg/scheduler/metrics/metrics.go).

A cycle filters nodes until it has found ``numFeasibleNodesToFind`` of them, starting at
``nextStartNodeIndex`` (pkg/scheduler/schedule_one.go, ``findNodesThatPassFilters``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from prometheus_client import generate_latest

from setpoint.workloads import nodeops
from setpoint.workloads.scheduler import schedule
from setpoint.workloads.scheduler.algorithm import num_feasible_nodes_to_find
from setpoint.workloads.scheduler.predicates import node_resources_fit, resource_fit
from setpoint.workloads.scheduler.queue import INITIAL_BACKOFF
from setpoint.workloads.scheduler.resources import pod_non_zero_requests, pod_requests
from setpoint.workloads.scheduler.scoring import (
    balanced_allocation,
    least_allocated,
    resource_scores,
)
from tests.waiting import quiet_period, wait_for
from tests.workloads.podsim import scheduling_cluster
from tests.workloads.test_scheduler import POD, Cluster, make_cache, make_pod, place

# Long enough for two retries if the scheduler polled at each backoff's end (1 s, then 2 s).
NO_POLLING_PERIOD = 2.5 * INITIAL_BACKOFF


@pytest.mark.parametrize(("nodes", "to_find"), [
    (10, 10), (99, 99), (100, 100), (200, 100), (250, 120), (1000, 420), (5000, 500),
    (6000, 300), (100_000, 5000)])
def test_num_feasible_nodes_to_find_is_kube_schedulers_adaptive_percentage(
        nodes: int, to_find: int) -> None:
    """``numFeasibleNodesToFind``: all nodes below 100; else (50 - nodes/125)% of them, at
    least 5%, and at least 100 nodes."""
    assert num_feasible_nodes_to_find(nodes) == to_find


def test_a_cycle_stops_filtering_at_enough_feasible_nodes_and_the_next_starts_there() -> None:
    cache = make_cache(250)
    nodes = cache.node_infos()
    first = schedule(make_pod("a", cpu="100m"), nodes)
    assert first.processed == 120 and first.node in nodes[:120]
    second = schedule(make_pod("b", cpu="100m"), nodes, start=first.processed)
    assert second.processed == 120 and second.node in nodes[120:240]
    # wrapping around: 130 nodes left from 240 on, it continues at the first
    third = schedule(make_pod("c", cpu="100m"), nodes, start=240)
    assert third.node in nodes[240:] + nodes[:110]
    # a cycle that fails looks at every node: its message counts them all
    failed = schedule(make_pod("big", cpu="5"), nodes, start=17)
    assert failed.node is None and failed.processed == 250
    assert failed.message.startswith("0/250 nodes are available: 250 Insufficient cpu.")


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async with scheduling_cluster() as (client, manager, sched):
        yield Cluster(client, manager, sched)


def exposed(cluster: Cluster) -> dict[str, float]:
    """The scheduler's samples as the manager's registry exposes them, by series."""
    text = generate_latest(cluster.manager.metrics.registry).decode()
    return {series: float(value) for series, _, value in
            (line.rpartition(" ") for line in text.splitlines())
            if series.startswith(("scheduler_schedule_attempts_total", "scheduler_pending"))}


def attempts(result: str) -> str:
    return f'scheduler_schedule_attempts_total{{profile="default-scheduler",result="{result}"}}'


def pending(queue: str) -> str:
    return f'scheduler_pending_pods{{queue="{queue}"}}'


async def test_an_unschedulable_pod_waits_without_polling_until_a_node_with_room_is_added(
        cluster: Cluster) -> None:
    await cluster.client.create(make_pod("huge", cpu="3"))
    await cluster.unschedulable("huge")
    await wait_for(lambda: exposed(cluster)[pending("unschedulable")] == 1)
    # a pod that fits is bound meanwhile: NodeResourcesFit does not register pod creation
    await cluster.client.create(make_pod("small", cpu="500m"))
    await cluster.bound(1)
    await quiet_period(NO_POLLING_PERIOD)
    metrics = exposed(cluster)
    assert metrics[attempts("unschedulable")] == 1 and metrics[attempts("scheduled")] == 1
    assert metrics[pending("unschedulable")] == 1 and metrics[pending("active")] == 0

    await nodeops.add_node(cluster.client, cpu="4")
    assert (await cluster.bound(2))["huge"]["spec"]["nodeName"] == "node-3"
    metrics = exposed(cluster)
    # node-3 is created not-ready:NoSchedule (plugin/pkg/admission/nodetaint): NodeResourcesFit's
    # hint queues the pod on the Node add, and a cycle that runs before the node lifecycle
    # controller lifts the taint is rejected by TaintToleration, whose hint then queues it on
    # the Node update; so one more unschedulable attempt, or none, as in kube-scheduler
    assert metrics[attempts("unschedulable")] in (1, 2)
    assert metrics[attempts("scheduled")] == 2
    assert sum(metrics[pending(q)] for q in ("active", "backoff", "unschedulable")) == 0


async def test_an_unschedulable_pod_is_tried_again_once_an_assigned_pod_frees_its_room(
        cluster: Cluster) -> None:
    for i in range(4):
        await cluster.client.create(make_pod(f"p{i}", cpu="1"))
    await cluster.bound(4)
    await cluster.client.create(make_pod("late", cpu="1"))
    await cluster.unschedulable("late")
    await quiet_period(NO_POLLING_PERIOD)
    assert exposed(cluster)[attempts("unschedulable")] == 1

    await cluster.client.delete(POD, "p0", namespace="default", grace_period_seconds=0)
    assert "late" in await cluster.bound(4)
    metrics = exposed(cluster)
    assert metrics[attempts("unschedulable")] == 1 and metrics[attempts("scheduled")] == 5


async def test_gated_pods_are_counted_apart_and_never_tried(cluster: Cluster) -> None:
    await cluster.client.create(make_pod("gated", schedulingGates=[{"name": "example/gate"}]))
    await wait_for(lambda: exposed(cluster)[pending("gated")] == 1)
    assert exposed(cluster).get(attempts("unschedulable"), 0) == 0


def test_a_nodes_resource_scores_are_the_two_plugins_scores_to_the_last_bit() -> None:
    """A successful cycle scores every feasible node (all of them up to 100 nodes); the
    NodeResourcesFit (LeastAllocated) and NodeResourcesBalancedAllocation scores are summed in
    one loop over the nodes, and must be the very floats the two plugins' functions give, so
    that ties (broken by the first node) fall the same way."""
    cache = make_cache(6, cpu="3", node_2={"cpu": "0"}, node_3={"cpu": "500m"})
    for i, (cpu, memory) in enumerate([("1", "1Gi"), ("700m", "5Gi"), ("2", "100Mi"),
                                       (None, None), ("300m", "15Gi")]):
        place(cache, make_pod(f"placed-{i}", cpu=cpu, memory=memory), f"node-{i % 6 + 1}")
    nodes = cache.node_infos()
    for pod in (make_pod("a", cpu="250m", memory="1Gi"), make_pod("b"),
                make_pod("c", cpu="2", memory="20Gi")):
        request, non_zero = pod_requests(pod), pod_non_zero_requests(pod)
        expected = [least_allocated(non_zero, n) + balanced_allocation(request, n)
                    for n in nodes]
        assert resource_scores(request, non_zero, nodes) == expected


def test_node_resources_fit_read_once_per_cycle_gives_the_filters_statuses() -> None:
    """A failed cycle asks NodeResourcesFit of every node (``fitsRequest`` in
    pkg/scheduler/framework/plugins/noderesources/fit.go); with the pod's side read once per
    cycle it must give the very statuses of the filter, in the same order of reasons."""
    cache = make_cache(5, cpu="2", node_2={"pods": 1}, node_3={"cpu": "0"},
                       node_4={"pods": 0})
    for i, (cpu, memory) in enumerate([("1500m", "15Gi"), (None, None), ("1", "1Gi")]):
        place(cache, make_pod(f"placed-{i}", cpu=cpu, memory=memory), f"node-{i + 1}")
    pods = [make_pod("a", cpu="250m", memory="1Gi"), make_pod("none"),
            make_pod("cpu", cpu="1"), make_pod("memory", memory="2Gi"),
            make_pod("both", cpu="3", memory="17Gi"),
            make_pod("storage", cpu="1"), make_pod("gpu", cpu="1")]
    pods[5]["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "1Gi"
    pods[6]["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = "1"
    seen = set()
    for pod in pods:
        request = pod_requests(pod)
        fit = resource_fit(request)
        for node in cache.node_infos():
            expected = node_resources_fit(request, node)
            assert fit(node) == expected
            seen.add(expected.reasons if expected else ())
    assert {(), ("Too many pods",), ("Insufficient cpu",), ("Insufficient memory",),
            ("Insufficient cpu", "Insufficient memory"),
            ("Too many pods", "Insufficient cpu", "Insufficient memory")} <= seen
