"""The scheduler's unschedulable pods: an event wakes a waiting pod once.

kube-scheduler's ``movePodsToActiveOrBackoffQueue`` (kubernetes/kubernetes
pkg/scheduler/backend/queue/scheduling_queue.go) moves a pod out of ``unschedulablePods``
into the backoff or active queue; later events find it there and do not move it again
until it has had its scheduling cycle and failed anew. Waking it at every event instead
made each deleted pod cost a reconcile of every waiting pod: quadratic in a rollout of
thousands of pods (issue 12).
"""

from __future__ import annotations

from setpoint.runtime import Request
from setpoint.workloads.scheduler.queue import FREED_BY_POD_REMOVAL, UnschedulablePods


def test_an_event_wakes_each_waiting_pod_once_until_its_next_cycle() -> None:
    pods = UnschedulablePods()
    for i in range(100):
        pods.add(f"default/pod-{i}", {"NodeResourcesFit"})

    first = pods.affected(FREED_BY_POD_REMOVAL)
    assert len(first) == 100
    # a thousand more deletions before their cycles ran wake nobody again
    assert all(pods.affected(FREED_BY_POD_REMOVAL) == [] for _ in range(1000))
    # they still wait (with their backoff) until their cycle says otherwise
    assert len(pods) == 100 and pods.backoff_left("default/pod-0") > 0

    pods.add("default/pod-0", {"NodeResourcesFit"})  # its cycle ran and failed again
    pods.remove("default/pod-1")  # its cycle ran and placed it
    assert pods.affected(FREED_BY_POD_REMOVAL) == [Request("default", "pod-0")]


def test_a_pod_waits_for_the_events_that_can_help_it() -> None:
    pods = UnschedulablePods()
    pods.add("default/affine", {"InterPodAffinity"})
    pods.add("default/tainted", {"TaintToleration"})

    assert pods.affected(FREED_BY_POD_REMOVAL) == [Request("default", "affine")]
    # a node change (any plugin) still wakes the one the deletion could not help
    assert pods.affected(frozenset()) == [Request("default", "tainted")]
