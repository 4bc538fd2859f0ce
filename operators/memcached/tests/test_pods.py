"""Reading backend pods: who serves, and what stops the others."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from operators.memcached.mcrouter import Backend
from operators.memcached.pods import ordinal_of, pod_problems, read_backends
from setpoint.resources.models.core_v1 import Pod


def pod(name: str, ip: str | None = None, ready: bool = False, **status: Any) -> Pod:
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    conditions += status.pop("conditions", [])
    return Pod.model_validate({"metadata": {"name": name},
                               "status": {"podIP": ip, "conditions": conditions, **status}})


def test_ready_backends_come_in_ordinal_order_with_their_addresses() -> None:
    pods = [pod("m-memcached-10", "10.0.0.10", ready=True),
            pod("m-memcached-2", "10.0.0.2", ready=True),
            pod("m-memcached-1", "10.0.0.1", ready=False)]

    found = read_backends(pods, "m-memcached", wanted=11)
    assert found.ready == [Backend(2, "10.0.0.2"), Backend(10, "10.0.0.10")]
    assert (found.existing, found.ready_count) == (3, 2)


def test_pods_being_scaled_away_or_deleted_or_foreign_are_not_backends() -> None:
    leaving = pod("m-memcached-1", "10.0.0.1", ready=True)
    leaving.metadata.deletion_timestamp = datetime(2025, 1, 1, tzinfo=UTC)
    pods = [pod("m-memcached-0", "10.0.0.0", ready=True), leaving,
            pod("m-memcached-3", "10.0.0.3", ready=True),
            pod("other-memcached-2", "10.0.0.9", ready=True)]

    found = read_backends(pods, "m-memcached", wanted=3)
    assert found.ready == [Backend(0, "10.0.0.0")]
    assert found.existing == 1


def test_an_unschedulable_pod_is_reported_with_the_schedulers_message() -> None:
    message = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    stuck = pod("m-memcached-0", conditions=[{"type": "PodScheduled", "status": "False",
                                              "reason": "Unschedulable", "message": message}])

    (problem,) = read_backends([stuck], "m-memcached", wanted=1).problems
    assert problem.reason == "Unschedulable"
    assert problem.message == f"pod m-memcached-0: {message}"


def test_a_container_in_back_off_is_reported_with_the_kubelets_reason() -> None:
    crashing = pod("m-mcrouter-abc", "10.0.1.1", containerStatuses=[{
        "name": "mcrouter", "ready": False, "restartCount": 4,
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}}}])

    (problem,) = pod_problems([crashing])
    assert problem.reason == "CrashLoopBackOff"
    assert "m-mcrouter-abc container mcrouter" in problem.message


def test_ordinals_come_only_from_the_statefulsets_own_pods() -> None:
    assert ordinal_of("m-memcached-7", "m-memcached") == 7
    assert ordinal_of("m-memcached-x", "m-memcached") is None
    assert ordinal_of("mm-memcached-7", "m-memcached") is None
