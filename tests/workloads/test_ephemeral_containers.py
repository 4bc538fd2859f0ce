"""Ephemeral containers on the simulated kubelet: ``kubectl debug`` (1.32, without ``-it``)
adds one through ``pods/ephemeralcontainers`` and the kubelet starts it.

The kubelet's side (kubernetes/kubernetes release-1.32): computePodActions
(pkg/kubelet/kuberuntime/kuberuntime_manager.go) starts an ephemeral container that has no
status yet, even before initialization completes, and never restarts it;
generateAPIPodStatus (pkg/kubelet/kubelet_pods.go) reports it in
``status.ephemeralContainerStatuses`` through convertToAPIContainerStatuses, and the probe
manager's UpdatePodStatus (pkg/kubelet/prober/prober_manager.go) sets ``ready`` and
``started`` for regular and init containers only: an ephemeral container is never ready
and has no ``started``. It does not count in the pod's phase or conditions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.workloads.process.support import Kubectl
from tests.workloads.test_kubelet_support import kubelet_env, pod, ready

Obj = dict[str, Any]
EPHEMERAL_FIELDS = {"name", "state", "lastState", "ready", "restartCount", "image", "imageID",
                    "containerID"}


def ephemeral_status(obj: Obj, name: str) -> Obj:
    for cs in (obj.get("status") or {}).get("ephemeralContainerStatuses") or ():
        if cs.get("name") == name:
            return dict(cs)
    return {}


def running(name: str) -> Any:
    return lambda p: "running" in (ephemeral_status(p, name).get("state") or {})


async def test_kubectl_debug_adds_an_ephemeral_container_the_kubelet_runs(
        tmp_path: Path) -> None:
    async with kubelet_env() as env:
        kubectl = Kubectl(env, tmp_path, None)
        await env.run(pod("web", "c"))
        await env.until("web", ready)
        code, _, err = await kubectl.run("debug", "web", "--image=busybox", "--target=c",
                                           "-c", "dbg", "--", "sleep", "1")
        assert code == 0, err
        live = await env.until("web", running("dbg"))
        [ec] = live["spec"]["ephemeralContainers"]
        assert (ec["name"], ec["image"], ec["targetContainerName"]) == ("dbg", "busybox", "c")
        assert ec["command"] == ["sleep", "1"]
        cs = ephemeral_status(live, "dbg")
        assert set(cs) == EPHEMERAL_FIELDS
        assert cs["ready"] is False and cs["restartCount"] == 0
        assert cs["image"] == "docker.io/library/busybox:latest"
        # the pod stays Running and Ready: an ephemeral container has no say in either
        assert live["status"]["phase"] == "Running" and ready(live)
        # kubectl shows it
        described = await kubectl.ok("describe", "pod", "web")
        assert "Ephemeral Containers:" in described and "dbg:" in described
        # a second one beside it; the first is not restarted
        await kubectl.ok("debug", "web", "--image=busybox", "-c", "dbg2", "--", "true")
        live = await env.until("web", running("dbg2"))
        assert [c["name"] for c in live["spec"]["ephemeralContainers"]] == ["dbg", "dbg2"]
        assert [c["name"] for c in live["status"]["ephemeralContainerStatuses"]] == [
            "dbg", "dbg2"]
        assert ephemeral_status(live, "dbg")["containerID"] == cs["containerID"]


async def test_ephemeral_container_starts_before_initialization() -> None:
    """Ephemeral containers may be started even if initialization is not yet complete
    (computePodActions)."""
    async with kubelet_env() as env:
        body = pod("slow", "c", annotations={"sim.setpoint.dev/init-duration": "1h"})
        body["spec"]["initContainers"] = [{"name": "init", "image": "busybox"}]
        await env.run(body)
        await env.until("slow", lambda p: "running" in (
            ((p.get("status") or {}).get("initContainerStatuses") or [{}])[0].get("state")
            or {}))
        await env.client.request(
            "PATCH", "/api/v1/namespaces/default/pods/slow/ephemeralcontainers",
            body={"spec": {"ephemeralContainers": [{"name": "dbg", "image": "busybox"}]}},
            content_type="application/strategic-merge-patch+json")
        live = await env.until("slow", running("dbg"))
        assert live["status"]["phase"] == "Pending"


async def test_ephemeral_container_is_never_restarted() -> None:
    """Containers that exit after a while (``sim.setpoint.dev/run-for``) under
    ``restartPolicy: Always``: the regular one restarts, the ephemeral one stays exited."""
    async with kubelet_env() as env:
        await env.run(pod("brief", "c", annotations={"sim.setpoint.dev/run-for": "0.3s"}))
        await env.client.request(
            "PATCH", "/api/v1/namespaces/default/pods/brief/ephemeralcontainers",
            body={"spec": {"ephemeralContainers": [{"name": "dbg", "image": "busybox"}]}},
            content_type="application/strategic-merge-patch+json")
        live = await env.until("brief", lambda p: "terminated" in (
            ephemeral_status(p, "dbg").get("state") or {}) and any(
            (cs.get("restartCount") or 0) >= 2
            for cs in (p.get("status") or {}).get("containerStatuses") or ()))
        dbg = ephemeral_status(live, "dbg")
        assert dbg["restartCount"] == 0 and dbg["lastState"] == {}
        assert dbg["state"]["terminated"]["reason"] == "Completed"
