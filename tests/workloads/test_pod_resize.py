"""In-place pod resize end to end: ``kubectl patch --subresource=resize`` (kubectl 1.32)
through ``pods/resize`` to the simulated kubelet, which actuates it.

Sources (kubernetes/kubernetes release-1.32):
- pkg/registry/core/pod/strategy.go, podResizeStrategy.PrepareForUpdate with
  MarkPodProposedForResize (pkg/api/pod/util.go): the API server proposes the resize.
- pkg/kubelet/kubelet.go, handlePodResourcesResize and canResizePod: a pod whose requests
  exceed the node's allocatable is Infeasible; one that does not fit beside the node's other
  pods (canAdmitPod) is Deferred and retried; else the allocation takes the new resources
  and the resize is InProgress until the runtime applies them, when ``status.resize`` is
  cleared (determinePodResizeStatus).
- pkg/kubelet/kubelet_pods.go, convertToAPIContainerStatuses / convertContainerStatusResources:
  a running resizable container's status shows its allocated ``resources``;
  ``allocatedResources`` needs InPlacePodVerticalScalingAllocatedStatus, off in 1.32.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.workloads.process.support import Kubectl
from tests.workloads.test_kubelet_support import (
    POD,
    kubelet_env,
    node,
    pod,
    ready,
    statuses,
)

Obj = dict[str, Any]


def _pod(name: str, cpu: str, memory: str = "64Mi", **spec: Any) -> Obj:
    body = pod(name, "app", **spec)
    body["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": "1Gi"}}
    return body


def _resize(cpu: str) -> str:
    return json.dumps({"spec": {"containers": [
        {"name": "app", "resources": {"requests": {"cpu": cpu}}}]}})


def _applied(cpu: str) -> Any:
    def check(p: Obj) -> bool:
        cs = statuses(p).get("app") or {}
        return bool("resize" not in p["status"] and
                    ((cs.get("resources") or {}).get("requests") or {}).get("cpu") == cpu)
    return check


async def test_kubectl_resize_is_applied_by_the_kubelet(tmp_path: Path) -> None:
    async with kubelet_env() as env:
        kubectl = Kubectl(env, tmp_path, None)
        await env.run(_pod("web", "500m"))
        live = await env.until("web", ready)
        cs = statuses(live)["app"]
        # the allocation a running container reports (convertContainerStatusResources)
        assert cs["resources"] == {"requests": {"cpu": "500m", "memory": "64Mi"},
                                   "limits": {"memory": "1Gi"}}
        assert "allocatedResources" not in cs
        container_id = cs["containerID"]
        version = (await env.get("web"))["metadata"]["resourceVersion"]
        out = await kubectl.ok("patch", "pod", "web", "--subresource=resize",
                               "-p", _resize("1"))
        assert "pod/web patched" in out
        live = await env.until("web", _applied("1"))
        # the states it went through: proposed by the server, InProgress by the kubelet
        seen: list[str | None] = []
        async with env.client.watch(POD, namespace="default", name="web",
                                    resource_version=version) as watch:
            async for _, obj in watch:
                requests = obj["spec"]["containers"][0]["resources"]["requests"]
                state = obj["status"].get("resize")
                if requests["cpu"] == "1" and (not seen or seen[-1] != state):
                    seen.append(state)  # (from the resize request on)
                if obj["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]:
                    break
        assert seen == ["Proposed", "InProgress", None], seen
        assert live["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "1"
        assert statuses(live)["app"]["containerID"] == container_id  # in place: no restart
        assert statuses(live)["app"]["restartCount"] == 0
        assert live["status"]["qosClass"] == "Burstable" and ready(live)
        # kubectl reads the subresource too
        got = json.loads(await kubectl.ok("get", "pod", "web", "--subresource=resize",
                                          "-o", "json"))
        assert got["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "1"


async def test_kubectl_shows_the_servers_refusal(tmp_path: Path) -> None:
    async with kubelet_env() as env:
        kubectl = Kubectl(env, tmp_path, None)
        body = pod("fixed", "app")
        body["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1", "memory": "1Gi"}}
        await env.run(body)
        await env.until("fixed", ready)
        code, _, err = await kubectl.run("patch", "pod", "fixed", "--subresource=resize",
                                         "-p", _resize("500m"))
        assert code != 0
        assert "Pod QOS Class may not change as a result of resizing" in err


async def test_a_resize_beyond_the_node_is_infeasible() -> None:
    async with kubelet_env() as env:
        await env.run(_pod("big", "1"))
        await env.until("big", ready)
        await env.client.request(
            "PATCH", "/api/v1/namespaces/default/pods/big/resize",
            body={"spec": {"containers": [{"name": "app", "resources": {
                "requests": {"cpu": "5"}}}]}},
            content_type="application/strategic-merge-patch+json")
        live = await env.until("big", lambda p: p["status"].get("resize") == "Infeasible")
        # the container keeps what it had
        assert statuses(live)["app"]["resources"]["requests"]["cpu"] == "1"


async def test_a_resize_that_does_not_fit_yet_is_deferred_until_room_is_made() -> None:
    async with kubelet_env(nodes=(node("node-a", "127.0.1.1", cpu="2"),)) as env:
        await env.run(_pod("grower", "1"))
        await env.run(_pod("neighbour", "1"))
        await env.until("grower", ready)
        await env.until("neighbour", ready)
        await env.client.request(
            "PATCH", "/api/v1/namespaces/default/pods/grower/resize",
            body={"spec": {"containers": [{"name": "app", "resources": {
                "requests": {"cpu": "1500m"}}}]}},
            content_type="application/strategic-merge-patch+json")
        live = await env.until("grower", lambda p: p["status"].get("resize") == "Deferred")
        assert statuses(live)["app"]["resources"]["requests"]["cpu"] == "1"
        await env.client.request("DELETE", "/api/v1/namespaces/default/pods/neighbour",
                                 body={"gracePeriodSeconds": 0})
        await env.until("grower", _applied("1500m"))
