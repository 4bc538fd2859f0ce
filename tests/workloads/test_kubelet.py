"""The simulated kubelet drives bound pods as a real kubelet does, seen from the API."""

from __future__ import annotations

import ipaddress
import re
import time
from datetime import datetime
from typing import Any

from setpoint.client import NotFoundError
from tests.waiting import quiet_period
from tests.workloads.test_kubelet_support import (
    NODE,
    POD,
    Env,
    condition,
    kubelet_env,
    node,
    phase,
    pod,
    ready,
    statuses,
    wait_for,
)

# The fields a v1.32 kubelet fills in a ContainerStatus (convertToAPIContainerStatuses with
# the default feature gates but InPlacePodVerticalScaling, which the recorded API server
# has on (it serves pods/resize): RecursiveReadOnlyMounts on; SupplementalGroupsPolicy,
# ResourceHealthStatus and InPlacePodVerticalScalingAllocatedStatus off). ``resources`` is
# a running container's allocation (convertContainerStatusResources), empty for BestEffort.
CONTAINER_FIELDS = {"name", "state", "lastState", "ready", "restartCount", "image", "imageID",
                    "containerID", "started", "volumeMounts", "resources"}
KUBELET_CONDITIONS = ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                      "PodScheduled"]
Obj = dict[str, Any]
CONTAINER_ID = re.compile(r"^containerd://[0-9a-f]{64}$")


async def test_bound_pod_becomes_running_and_ready_with_every_kubelet_field() -> None:
    async with kubelet_env() as env:
        await env.run(pod("web", "web", "sidecar"))
        live = await env.until("web", ready)
        status = live["status"]
        assert status["phase"] == "Running"
        assert [c["type"] for c in status["conditions"]] == KUBELET_CONDITIONS
        assert all(c["status"] == "True" and c["lastTransitionTime"]
                   for c in status["conditions"])
        assert status["hostIP"] == "127.0.1.1"
        assert status["hostIPs"] == [{"ip": "127.0.1.1"}]
        assert ipaddress.ip_address(status["podIP"]) in ipaddress.ip_network("127.16.0.0/12")
        assert status["podIPs"] == [{"ip": status["podIP"]}]
        datetime.fromisoformat(status["startTime"].replace("Z", "+00:00"))
        assert status["qosClass"] == "BestEffort"  # the server's, kept
        assert [cs["name"] for cs in status["containerStatuses"]] == ["sidecar", "web"]
        for cs in status["containerStatuses"]:
            assert set(cs) == CONTAINER_FIELDS
            assert CONTAINER_ID.match(cs["containerID"])
            assert cs["image"] == "docker.io/library/nginx:latest"
            assert cs["imageID"].startswith("docker.io/library/nginx@sha256:")
            assert cs["ready"] is True and cs["started"] is True
            assert cs["restartCount"] == 0 and cs["lastState"] == {}
            assert cs["resources"] == {}
            assert set(cs["state"]) == {"running"} and cs["state"]["running"]["startedAt"]
            assert cs["volumeMounts"][0]["mountPath"] == \
                "/var/run/secrets/kubernetes.io/serviceaccount"
            assert cs["volumeMounts"][0]["recursiveReadOnly"] == "Disabled"
        # Pending -> Running and Ready is one status write
        assert env.status_writes("web") == 1


async def test_pods_get_distinct_addresses_from_their_nodes_range() -> None:
    async with kubelet_env() as env:
        for i, node_name in enumerate(["node-a", "node-a", "node-b"]):
            await env.run(pod(f"p{i}"), node_name)
        pods = [await env.until(f"p{i}", ready) for i in range(3)]
        ips = [p["status"]["podIP"] for p in pods]
        assert len(set(ips)) == 3
        a_net = ipaddress.ip_network(f"{ips[0]}/24", strict=False)
        assert ipaddress.ip_address(ips[1]) in a_net
        assert ipaddress.ip_address(ips[2]) not in a_net
        assert pods[2]["status"]["hostIP"] == "127.0.1.2"


async def test_host_network_pod_uses_the_node_address() -> None:
    async with kubelet_env() as env:
        await env.run(pod("hn", hostNetwork=True))
        live = await env.until("hn", ready)
        assert live["status"]["podIP"] == live["status"]["hostIP"] == "127.0.1.1"


async def test_unbound_pods_and_pods_of_down_nodes_are_left_alone() -> None:
    nodes = (node("node-a", "127.0.1.1"), node("node-down", "127.0.1.9", ready="Unknown"))
    async with kubelet_env(nodes=nodes) as env:
        await env.client.create(pod("floating"))
        await env.run(pod("stranded"), "node-down")
        await env.run(pod("fine"))
        await env.until("fine", ready)
        assert (await env.get("floating"))["status"] == {"phase": "Pending",
                                                         "qosClass": "BestEffort"}
        assert phase(await env.get("stranded")) == "Pending"
        assert "containerStatuses" not in (await env.get("stranded"))["status"]


async def test_pods_start_once_their_node_comes_back() -> None:
    nodes = (node("node-a", "127.0.1.1", ready="False"),)
    async with kubelet_env(nodes=nodes) as env:
        await env.run(pod("waiting"))
        live = await env.client.get_status(NODE, "node-a")
        live["status"]["conditions"][0]["status"] = "True"
        await env.client.update_status(live)
        await env.until("waiting", ready)


async def test_init_containers_run_first_in_order() -> None:
    body = pod("init", annotations={"sim.setpoint.dev/init-duration": "300ms"},
               initContainers=[{"name": "first", "image": "busybox"},
                               {"name": "second", "image": "busybox"}])
    async with kubelet_env() as env:
        await env.run(body)
        pending = await env.until("init", lambda p: bool(statuses(p, init=True)))
        assert phase(pending) == "Pending"
        initialized = condition(pending, "Initialized")
        assert initialized["status"] == "False"
        assert initialized["reason"] == "ContainersNotInitialized"
        assert initialized["message"] == "containers with incomplete status: [first second]"
        waiting = statuses(pending)["app"]["state"]["waiting"]
        assert waiting == {"reason": "PodInitializing"}
        assert "running" in statuses(pending, init=True)["first"]["state"]
        assert statuses(pending, init=True)["second"]["state"] == {
            "waiting": {"reason": "PodInitializing"}}
        live = await env.until("init", ready)
        inits = live["status"]["initContainerStatuses"]
        assert [s["name"] for s in inits] == ["first", "second"]
        for s in inits:
            term = s["state"]["terminated"]
            assert term["exitCode"] == 0 and term["reason"] == "Completed"
            assert term["containerID"] == s["containerID"]
            assert s["ready"] is True and s["started"] is False
        assert inits[0]["state"]["terminated"]["finishedAt"] <= \
            inits[1]["state"]["terminated"]["startedAt"]
        assert inits[1]["state"]["terminated"]["finishedAt"] <= \
            statuses(live)["app"]["state"]["running"]["startedAt"]
        assert condition(live, "Initialized")["status"] == "True"


async def test_readiness_delay_annotation_holds_ready_back() -> None:
    async with kubelet_env() as env:
        await env.run(pod("slow", annotations={"sim.setpoint.dev/ready-after": "600ms"}))
        running = await env.until("slow", lambda p: phase(p) == "Running")
        assert condition(running, "Ready") == {
            **condition(running, "Ready"), "status": "False", "reason": "ContainersNotReady",
            "message": "containers with unready status: [app]"}
        assert statuses(running)["app"]["ready"] is False
        assert statuses(running)["app"]["started"] is True
        live = await env.until("slow", ready)
        started = statuses(live)["app"]["state"]["running"]["startedAt"]
        assert condition(live, "Ready")["lastTransitionTime"] >= started
        assert env.status_writes("slow") == 2


async def test_readiness_probe_initial_delay_is_honoured_but_capped() -> None:
    probe = {"httpGet": {"path": "/", "port": 80}, "initialDelaySeconds": 3600}
    body = pod("probed")
    body["spec"]["containers"][0]["readinessProbe"] = probe
    async with kubelet_env() as env:  # FAST caps probe delays at 0.5 s
        await env.run(body)
        running = await env.until("probed", lambda p: phase(p) == "Running")
        assert not ready(running)
        await env.until("probed", ready)


async def test_withheld_readiness_drops_ready_until_released() -> None:
    from setpoint.workloads import faults

    async with kubelet_env() as env:
        await env.run(pod("flappy"))
        await env.until("flappy", ready)
        await faults.set_ready(env.client, "flappy", ready=False)
        await env.until("flappy", lambda p: not ready(p) and phase(p) == "Running")
        await faults.set_ready(env.client, "flappy", ready=True)
        await env.until("flappy", ready)


async def job_pod(env: Env, name: str, **annotations: str) -> dict[str, object]:
    """A pod owned by a Job (created too, or the garbage collector takes the pod)."""
    job: dict[str, Any] = await env.client.create({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": f"{name}-job", "namespace": "default"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
                                       "containers": [{"name": "app", "image": "busybox"}]}}}})
    body = pod(name, annotations={f"sim.setpoint.dev/{k.replace('_', '-')}": v
                                  for k, v in annotations.items()}, restartPolicy="Never")
    body["metadata"]["ownerReferences"] = [{
        "apiVersion": "batch/v1", "kind": "Job", "name": job["metadata"]["name"],
        "controller": True, "blockOwnerDeletion": True, "uid": job["metadata"]["uid"]}]
    return body


async def test_job_pods_complete_successfully() -> None:
    async with kubelet_env() as env:
        await env.run(await job_pod(env, "job-ok"))
        done = await env.until("job-ok", lambda p: phase(p) == "Succeeded")
        term = statuses(done)["app"]["state"]["terminated"]
        assert term["exitCode"] == 0 and term["reason"] == "Completed"
        assert statuses(done)["app"]["ready"] is False
        assert condition(done, "Ready")["reason"] == "PodCompleted"
        assert condition(done, "ContainersReady")["reason"] == "PodCompleted"
        assert condition(done, "Initialized")["reason"] == "PodCompleted"
        assert condition(done, "PodReadyToStartContainers")["status"] == "False"
        assert term["finishedAt"] >= term["startedAt"]


async def test_job_pod_with_exit_code_fails() -> None:
    async with kubelet_env() as env:
        await env.run(await job_pod(env, "job-bad", exit_code="3", run_for="50ms"))
        done = await env.until("job-bad", lambda p: phase(p) == "Failed")
        term = statuses(done)["app"]["state"]["terminated"]
        assert term["exitCode"] == 3 and term["reason"] == "Error"
        assert condition(done, "Ready")["reason"] == "PodFailed"


async def test_crashing_container_restarts_with_back_off() -> None:
    async with kubelet_env() as env:  # FAST: back-off 0.3 s then 0.6 s
        await env.run(pod("crashy", annotations={"sim.setpoint.dev/run-for": "100ms",
                                                 "sim.setpoint.dev/exit-code": "1"}))
        backing = await env.until("crashy", lambda p: "waiting" in statuses(p).get(
            "app", {}).get("state", {}))
        cs = statuses(backing)["app"]
        assert cs["state"]["waiting"]["reason"] == "CrashLoopBackOff"
        assert cs["state"]["waiting"]["message"].startswith("back-off 0s restarting failed "
                                                            "container=app pod=crashy_default(")
        assert cs["lastState"]["terminated"]["exitCode"] == 1
        assert cs["restartCount"] >= 1
        assert phase(backing) == "Running"
        await env.until("crashy", lambda p: statuses(p)["app"]["restartCount"] >= 2)


async def _delete_and_watch(env: Env, name: str, grace: int | None) -> tuple[float, list[Obj]]:
    """Delete ``name`` and watch it go: seconds until DELETED, and the objects seen."""
    rv = (await env.get(name))["metadata"]["resourceVersion"]
    watch = env.client.watch(POD, namespace="default", name=name, resource_version=rv)
    seen: list[Obj] = []
    start = _now()
    await env.client.delete(POD, name, namespace="default", grace_period_seconds=grace)
    async with watch:
        async for event_type, obj in watch:
            seen.append(obj)
            if event_type == "DELETED":
                return _now() - start, seen
    raise AssertionError("the watch ended before the pod was deleted")


async def test_graceful_deletion_waits_for_the_grace_period_then_deletes() -> None:
    async with kubelet_env() as env:
        await env.run(pod("bye", terminationGracePeriodSeconds=30))
        await env.until("bye", ready)
        gone_after, seen = await _delete_and_watch(env, "bye", grace=1)
        assert 0.9 <= gone_after < 3.0  # the 1 s grace period, honoured
        assert seen[0]["metadata"]["deletionGracePeriodSeconds"] == 1


async def test_terminal_status_is_written_before_the_final_delete() -> None:
    async with kubelet_env() as env:
        await env.run(pod("bye", terminationGracePeriodSeconds=30))
        await env.until("bye", ready)
        _, seen = await _delete_and_watch(env, "bye", grace=1)
        final = seen[-1]
        assert phase(final) == "Succeeded"
        assert statuses(final)["app"]["state"]["terminated"]["exitCode"] == 0


async def test_long_grace_periods_are_capped_unless_exact_timing_is_asked() -> None:
    async with kubelet_env() as env:  # FAST caps grace periods at 1 s
        await env.run(pod("capped", terminationGracePeriodSeconds=600))
        await env.until("capped", ready)
        start = _now()
        await env.client.delete(POD, "capped", namespace="default")
        await wait_for(lambda: _gone(env, "capped"))
        assert _now() - start < 60.0  # capped, not the 600 s asked (bounds loose for load)


async def test_stop_after_longer_than_grace_kills_the_container() -> None:
    async with kubelet_env() as env:
        await env.run(pod("stubborn", annotations={"sim.setpoint.dev/stop-after": "10s"},
                          terminationGracePeriodSeconds=1))
        await env.until("stubborn", ready)
        gone_after, _ = await _delete_and_watch(env, "stubborn", grace=None)
        assert 0.9 <= gone_after < 9.0  # killed at the grace period, not after 10 s


async def test_terminal_pod_is_deleted_at_once() -> None:
    """A pod that has Succeeded has no grace period: the pod strategy's CheckGracefulDelete
    (pkg/registry/core/pod/strategy.go) makes it 0 for a terminal phase, so the DELETE itself
    removes it, without waiting for the kubelet."""
    async with kubelet_env() as env:
        await env.run(await job_pod(env, "finished"))
        await env.until("finished", lambda p: phase(p) == "Succeeded")
        await env.client.delete(POD, "finished", namespace="default")
        assert await _gone(env, "finished")


async def test_pending_pod_being_deleted_is_deleted() -> None:
    nodes = (node("node-a", "127.0.1.1", ready="False"),)
    async with kubelet_env(nodes=nodes) as env:
        await env.run(pod("never"))
        await env.client.delete(POD, "never", namespace="default")
        live = await env.client.get_status(NODE, "node-a")
        live["status"]["conditions"][0]["status"] = "True"
        await env.client.update_status(live)
        await wait_for(lambda: _gone(env, "never"))


async def test_active_deadline_fails_the_pod() -> None:
    async with kubelet_env() as env:
        await env.run(pod("deadline", activeDeadlineSeconds=1))
        failed = await env.until("deadline", lambda p: phase(p) == "Failed")
        assert failed["status"]["reason"] == "DeadlineExceeded"
        assert failed["status"]["message"] == \
            "Pod was active on the node longer than the specified deadline"


async def test_restarted_kubelet_takes_running_pods_back_unchanged() -> None:
    async with kubelet_env() as env:
        await env.run(pod("steady"))
        before = await env.until("steady", ready)
        await env.restart_kubelet()
        await env.run(pod("after"))
        await env.until("after", ready)
        now = await env.get("steady")
        assert now["status"] == before["status"]
        assert now["status"]["podIP"] != (await env.get("after"))["status"]["podIP"]
        await env.client.delete(POD, "steady", namespace="default",
                                grace_period_seconds=1)
        await wait_for(lambda: _gone(env, "steady"))


QUIET_PERIOD_TO_PROVE_NO_STATUS_REWRITE = 1.0
"""Time for a second status write of a sync that changed nothing to show."""


def _syncs(env: Env) -> float:
    """Reconciles the pod workers finished, by any result."""
    registry = env.manager.metrics.registry
    return sum(registry.get_sample_value("controller_runtime_reconcile_total",
                                         {"controller": "kubelet", "result": result}) or 0.0
               for result in ("success", "error", "requeue", "requeue_after"))


async def test_a_sync_that_changes_nothing_writes_no_status() -> None:
    """The status manager writes only when the status differs from what the API holds
    (pkg/kubelet/status/status_manager.go ``needsUpdate``, ``isPodStatusByKubeletEqual``,
    v1.32); the API returns a PodCondition's unset ``lastProbeTime`` as null (a Go value
    field), so the kubelet's generated conditions must compare equal to that echo. A change
    to the pod's metadata makes the kubelet sync it again; before the fix that sync wrote
    every condition a second time, identical: 40-50% of the new pods in a rollout paid it."""
    async with kubelet_env() as env:
        await env.run(pod("steady"))
        await env.until("steady", ready)
        await wait_for(lambda: env.status_writes("steady") == 1)
        syncs = _syncs(env)
        touched = await env.client.patch(POD, "steady", {"metadata": {"labels": {"x": "y"}}},
                                         namespace="default")
        version = touched["metadata"]["resourceVersion"]
        store = env.manager.cache.store_for(POD)
        await wait_for(lambda: (store.get("default/steady") or {}).get("metadata", {})
                       .get("resourceVersion") == version and _syncs(env) > syncs)
        await quiet_period(QUIET_PERIOD_TO_PROVE_NO_STATUS_REWRITE)
        assert env.status_writes("steady") == 1
        assert (await env.get("steady"))["metadata"]["resourceVersion"] == version


async def test_an_unbound_pods_changes_never_reach_the_kubelet() -> None:
    """A kubelet watches only its node's pods (pkg/kubelet/config/apiserver.go
    ``NewSourceApiserver``: the ``spec.nodeName`` field selector): a pod that no node runs
    yet is no work for it, however often it changes (the scheduler's Unschedulable
    condition writes, a rollout's surge pods waiting for room), and its deletion neither.
    Once bound, the pod is the kubelet's."""
    async with kubelet_env() as env:
        await env.client.create(pod("floating"))
        touched = await env.client.patch(POD, "floating", {"metadata": {"labels": {"x": "y"}}},
                                         namespace="default")
        version = touched["metadata"]["resourceVersion"]
        store = env.manager.cache.store_for(POD)
        await wait_for(lambda: (store.get("default/floating") or {}).get("metadata", {})
                       .get("resourceVersion") == version)
        await quiet_period(QUIET_PERIOD_TO_PROVE_NO_STATUS_REWRITE)
        assert _syncs(env) == 0
        await env.run_bound("floating")
        await env.until("floating", ready)
        assert _syncs(env) > 0


async def test_deleted_pod_frees_its_address() -> None:
    async with kubelet_env() as env:
        await env.run(pod("one"))
        uid = (await env.until("one", ready))["metadata"]["uid"]
        assert env.workers.addresses.address_of(uid)
        await env.client.delete(POD, "one", namespace="default",
                                grace_period_seconds=0)
        await wait_for(lambda: env.workers.addresses.address_of(uid) is None)
        assert ("default", "one") not in env.workers.records


def _now() -> float:
    return time.monotonic()


async def _gone(env: Env, name: str) -> bool:
    try:
        await env.get(name)
    except NotFoundError:
        return True
    return False

