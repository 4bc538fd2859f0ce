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
    # PersistentVolumeClaimValidateLimitFunc: max against the request (maxRequestConstraint)
    claim = {"metadata": {"name": "huge"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}}}}
    status, answer = await module_api.post(f"{ns}/persistentvolumeclaims", claim)
    assert (status, answer["message"]) == (
        403, 'persistentvolumeclaims "huge" is forbidden: maximum storage usage per '
        "PersistentVolumeClaim is 10Gi, but request is 20Gi")


def _container(name: str, cpu: tuple[str, str] | None = None, *,
               memory: str | None = None, sidecar: bool = False) -> dict[str, Any]:
    """A container asking ``cpu`` as (request, limit) and ``memory`` as its request."""
    container: dict[str, Any] = {"name": name, "image": "busybox:1.36"}
    resources: dict[str, Any] = {}
    if cpu is not None:
        resources = {"requests": {"cpu": cpu[0]}, "limits": {"cpu": cpu[1]}}
    if memory is not None:
        resources.setdefault("requests", {})["memory"] = memory
    if resources:
        container["resources"] = resources
    if sidecar:
        container["restartPolicy"] = "Always"
    return container


async def test_pod_limits_bound_the_pods_totals(module_api: API) -> None:
    """A ``Pod`` item bounds the pod's totals (admission.go ``PodValidateLimitFunc``, its
    ``LimitTypePod`` branch, over ``podRequests``/``podLimits``): containers and sidecars
    summed, raised to what a one-off init container needs with the sidecars started before
    it; min, max, then ratio, per item in order; quantities shown as Go's Quantity.Add
    leaves them."""
    ns = await _namespace(module_api, "lr-pod", [
        {"type": "Pod", "max": {"cpu": "1"}, "maxLimitRequestRatio": {"cpu": "4"}}])

    def pod(name: str, containers: list[dict[str, Any]],
            init: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": containers}
        if init:
            spec["initContainers"] = init
        return {"metadata": {"name": name}, "spec": spec}

    cases = [
        # two containers, each under the max, together over it
        (pod("sum", [_container("a", ("600m", "600m")), _container("b", ("600m", "600m"))]),
         "maximum cpu usage per Pod is 1, but limit is 1200m"),
        # a sidecar's request and limit count with the containers': 900m / 200m
        (pod("sidecar", [_container("a", ("100m", "500m"))],
             [_container("side", ("100m", "400m"), sidecar=True)]),
         "cpu max limit to request ratio per Pod is 4, but provided ratio is 4.500000"),
        # a one-off init container runs beside the sidecars started before it: 900m + 200m
        (pod("init-after-sidecar", [_container("a", ("300m", "300m"))],
             [_container("side", ("200m", "200m"), sidecar=True),
              _container("once", ("900m", "900m"))]),
         "maximum cpu usage per Pod is 1, but limit is 1100m"),
        # no container asks for cpu: both bounds, aggregated
        (pod("none", [_container("a")]),
         "[maximum cpu usage per Pod is 1.  No limit is specified, cpu max limit to request "
         "ratio per Pod is 4, but no request is specified or request is 0]"),
    ]
    for body, reason in cases:
        status, answer = await module_api.post(f"{ns}/pods", body)
        name = body["metadata"]["name"]
        assert (status, answer.get("reason"), answer.get("message")) == (
            403, "Forbidden", f'pods "{name}" is forbidden: {reason}'), answer
    # the same containers with the one-off init container first: it runs alone (900m), and
    # the pod's total is the containers' and sidecar's 500m
    status, answer = await module_api.post(f"{ns}/pods", pod(
        "init-before-sidecar", [_container("a", ("300m", "300m"))],
        [_container("once", ("900m", "900m")),
         _container("side", ("200m", "200m"), sidecar=True)]))
    assert status == 201, answer
    # a container without cpu does not stop the others' sum (addResourceList)
    status, answer = await module_api.post(f"{ns}/pods", pod(
        "partial", [_container("a", ("500m", "800m")), _container("b")]))
    assert status == 201, answer

    memory = await _namespace(module_api, "lr-pod-memory", [
        {"type": "Pod", "min": {"memory": "1Gi"}}])
    status, answer = await module_api.post(f"{memory}/pods", pod(
        "small", [_container("a", memory="512Mi"), _container("b", memory="256Mi")]))
    assert (status, answer.get("message")) == (
        403, 'pods "small" is forbidden: minimum memory usage per Pod is 1Gi, but request '
        "is 768Mi"), answer


async def test_a_resize_is_not_limit_ranged_in_1_32(module_api: API) -> None:
    """kubernetes v1.32 plugin/pkg/admission/limitranger/admission.go
    ``DefaultLimitRangerActions.SupportsAttributes``: any subresource is ignored, so a
    ``pods/resize`` past a Container ``max`` is admitted (1.33 added the resize case), while
    the same resources on a new pod are refused."""
    ns = await _namespace(module_api, "lr-resize", [{"type": "Container", "max": {"cpu": "1"}}])
    status, out = await module_api.post(f"{ns}/pods", _pod("p", {"limits": {"cpu": "1"}}))
    assert status == 201, out
    status, out = await module_api.patch(
        f"{ns}/pods/p/resize",
        {"spec": {"containers": [{"name": "app", "resources": {
            "requests": {"cpu": "2"}, "limits": {"cpu": "2"}}}]}},
        "application/strategic-merge-patch+json")
    assert status == 200, out
    assert out["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "2"
    status, out = await module_api.post(f"{ns}/pods", _pod("q", {"limits": {"cpu": "2"}}))
    assert status == 403, out
    assert "maximum cpu usage per Container is 1, but limit is 2" in out["message"]
