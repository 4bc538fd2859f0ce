"""The shared pod-controller pieces, without a cluster: deletion ranking, expectations,
slow-start batches, readiness and pods from templates."""

from __future__ import annotations

from typing import Any

from setpoint.workloads.controllers.podcontrol import (
    Expectations,
    is_pod_active,
    is_pod_available,
    is_pod_ready,
    pod_from_template,
    rank_pods_for_deletion,
    slow_start_batch,
)

Obj = dict[str, Any]
NOW = 1_700_000_000.0


def stamp(seconds_ago: float) -> str:
    from datetime import UTC, datetime
    return datetime.fromtimestamp(NOW - seconds_ago, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(name: str, *, node: str = "n1", phase: str = "Running", ready_for: float | None = 3600,
        age: float = 7200, restarts: int = 0, cost: int | None = None) -> Obj:
    conditions = [] if ready_for is None else [
        {"type": "Ready", "status": "True", "lastTransitionTime": stamp(ready_for)}]
    notes = {} if cost is None else {"controller.kubernetes.io/pod-deletion-cost": str(cost)}
    return {"metadata": {"name": name, "uid": name, "creationTimestamp": stamp(age),
                         "annotations": notes},
            "spec": {"nodeName": node},
            "status": {"phase": phase, "conditions": conditions,
                       "containerStatuses": [{"name": "c", "restartCount": restarts}]}}


def names(pods: list[Obj]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_deletion_prefers_unscheduled_then_pending_then_unready() -> None:
    pods = [pod("running"), pod("unready", ready_for=None), pod("pending", phase="Pending",
                                                                   ready_for=None),
            pod("unscheduled", node="", phase="Pending", ready_for=None)]
    assert names(rank_pods_for_deletion(pods, now=NOW)) == [
        "unscheduled", "pending", "unready", "running"]


def test_deletion_prefers_low_cost_doubled_up_recent_restarted_newer() -> None:
    assert names(rank_pods_for_deletion([pod("a", cost=10), pod("b", cost=-1)], now=NOW)) \
        == ["b", "a"]
    crowded = [pod("alone", node="n2"), pod("crowd", node="n1")]
    related = [pod("x", node="n1"), pod("y", node="n1")]
    assert names(rank_pods_for_deletion(crowded, related, now=NOW)) == ["crowd", "alone"]
    # ready for a minute versus a day: different log2 buckets
    assert names(rank_pods_for_deletion([pod("old", ready_for=86400),
                                         pod("fresh", ready_for=60)], now=NOW)) == [
        "fresh", "old"]
    assert names(rank_pods_for_deletion([pod("calm"), pod("flaky", restarts=4)], now=NOW)) \
        == ["flaky", "calm"]
    assert names(rank_pods_for_deletion([pod("elder", age=86400, ready_for=None),
                                         pod("young", age=60, ready_for=None)], now=NOW)) == [
        "young", "elder"]


def test_expectations_wait_for_observed_creations_and_deletions() -> None:
    clock = [0.0]
    exp = Expectations(timeout=300, clock=lambda: clock[0])
    assert exp.satisfied("ns/rs")
    exp.expect_creations("ns/rs", 2)
    assert not exp.satisfied("ns/rs")
    exp.creation_observed("ns/rs")
    assert exp.pending("ns/rs") == (1, 0)
    exp.creation_observed("ns/rs")
    assert exp.satisfied("ns/rs")
    exp.expect_deletions("ns/rs", ["ns/a", "ns/b"])
    exp.deletion_observed("ns/rs", "ns/a")
    exp.deletion_observed("ns/rs", "ns/a")   # the same pod counts once
    exp.deletion_observed("ns/rs", "ns/zzz")  # not one we deleted
    assert exp.pending("ns/rs") == (0, 1)
    clock[0] = 301.0
    assert exp.satisfied("ns/rs")            # expired: a lost event must not block forever
    exp.forget("ns/rs")
    assert exp.pending("ns/rs") == (0, 0)


async def test_slow_start_batches_double_and_stop_at_the_first_failing_batch() -> None:
    batches: list[int] = []
    calls = [0]

    async def ok() -> None:
        calls[0] += 1

    done, error = await slow_start_batch(10, 1, ok)
    assert (done, error, calls[0]) == (10, None, 10)

    seen = [0]

    async def fail_from_fourth() -> None:
        seen[0] += 1
        batches.append(seen[0])
        if seen[0] >= 4:
            raise RuntimeError("quota")

    done, error = await slow_start_batch(20, 1, fail_from_fourth)
    # batches 1, 2 succeed; the batch of 4 has failures; nothing after it
    assert seen[0] == 7
    assert done == 3 and isinstance(error, RuntimeError)


def test_readiness_and_availability() -> None:
    ready = pod("p", ready_for=5)
    assert is_pod_ready(ready) and is_pod_available(ready, 0, NOW)
    assert is_pod_available(ready, 4, NOW) and not is_pod_available(ready, 10, NOW)
    assert not is_pod_ready(pod("q", ready_for=None))
    assert is_pod_active(ready)
    assert not is_pod_active(pod("done", phase="Succeeded"))
    terminating = pod("t")
    terminating["metadata"]["deletionTimestamp"] = stamp(0)
    assert not is_pod_active(terminating)


def test_pod_from_template_is_owned_and_generated_from_the_owner_name() -> None:
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
             "metadata": {"name": "web-abc", "namespace": "ns", "uid": "u1"}}
    template = {"metadata": {"labels": {"app": "web"}, "annotations": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    body = pod_from_template(template, owner)
    assert body["metadata"] == {
        "namespace": "ns", "generateName": "web-abc-", "labels": {"app": "web"},
        "annotations": {"a": "b"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc",
                             "uid": "u1", "controller": True, "blockOwnerDeletion": True}]}
    assert body["spec"] == template["spec"] and body["spec"] is not template["spec"]
    named = pod_from_template(template, owner, name="web-0")
    assert named["metadata"]["name"] == "web-0" and "generateName" not in named["metadata"]
