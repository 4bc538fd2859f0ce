"""LimitRanger over real HTTP (plugin/pkg/admission/limitranger/admission.go): a namespace's
LimitRanges give containers default requests and limits (recorded in the
``kubernetes.io/limit-ranger`` annotation) and refuse pods and claims out of their bounds with
403. Each test has a namespace of its own."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.conftest import API

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def _namespace(api: API, name: str, limits: list[dict[str, Any]]) -> str:
    status, _ = await api.post("/api/v1/namespaces", {"metadata": {"name": name}})
    assert status == 201
    status, body = await api.post(f"/api/v1/namespaces/{name}/limitranges",
                                  {"metadata": {"name": "limits"}, "spec": {"limits": limits}})
    assert status == 201, body
    return f"/api/v1/namespaces/{name}"


def _pod(name: str, resources: dict[str, Any] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": "busybox:1.36"}
    if resources is not None:
        container["resources"] = resources
    return {"metadata": {"name": name}, "spec": {
        "initContainers": [{"name": "init", "image": "busybox:1.36"}],
        "containers": [container]}}


async def test_containers_get_the_default_requests_and_limits(module_api: API) -> None:
    ns = await _namespace(module_api, "lr-defaults", [{
        "type": "Container", "default": {"cpu": "500m", "memory": "256Mi"},
        "defaultRequest": {"cpu": "100m", "memory": "128Mi"}}])
    status, pod = await module_api.post(f"{ns}/pods", _pod("p", {"limits": {"cpu": "1"}}))
    assert status == 201, pod
    app, init = pod["spec"]["containers"][0], pod["spec"]["initContainers"][0]
    # the pod's own limit is kept (and its request defaulted from it before admission)
    assert app["resources"] == {"limits": {"cpu": "1", "memory": "256Mi"},
                                "requests": {"cpu": "1", "memory": "128Mi"}}
    assert init["resources"] == {"limits": {"cpu": "500m", "memory": "256Mi"},
                                 "requests": {"cpu": "100m", "memory": "128Mi"}}
    assert pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: memory request for container app; memory limit for "
        "container app; cpu, memory request for init container init; cpu, memory limit for "
        "init container init")


async def test_pods_and_claims_out_of_bounds_are_forbidden(module_api: API) -> None:
    ns = await _namespace(module_api, "lr-bounds", [
        {"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "100m"},
         "maxLimitRequestRatio": {"cpu": "2"}},
        {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"},
         "max": {"storage": "10Gi"}}])
    cases = [
        (_pod("big", {"limits": {"cpu": "2"}}),
         "maximum cpu usage per Container is 1, but limit is 2"),
        (_pod("ratio", {"limits": {"cpu": "1"}, "requests": {"cpu": "200m"}}),
         "cpu max limit to request ratio per Container is 2, but provided ratio is 5.000000"),
        # every violation of the LimitRange, min, max then ratio: an aggregate
        (_pod("both", {"limits": {"cpu": "2"}, "requests": {"cpu": "200m"}}),
         "[maximum cpu usage per Container is 1, but limit is 2, cpu max limit to request "
         "ratio per Container is 2, but provided ratio is 10.000000]"),
    ]
    for body, reason in cases:
        status, answer = await module_api.post(f"{ns}/pods", body)
        name = body["metadata"]["name"]
        assert (status, answer["reason"], answer["message"], answer["details"]) == (
            403, "Forbidden", f'pods "{name}" is forbidden: {reason}',
            {"name": name, "kind": "pods"}), answer
    # the init container without resources got the defaults (limit = max, request = limit)
    status, answer = await module_api.post(f"{ns}/pods", _pod("fits", {"limits": {"cpu": "1"}}))
    assert status == 201, answer
    claim = {"metadata": {"name": "tiny"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "500Mi"}}}}
    status, answer = await module_api.post(f"{ns}/persistentvolumeclaims", claim)
    assert (status, answer["message"]) == (
        403, 'persistentvolumeclaims "tiny" is forbidden: minimum storage usage per '
        "PersistentVolumeClaim is 1Gi, but request is 500Mi")
