"""metadata.generation and immutable fields as apiequality.Semantic.DeepEqual decides them.

A built-in kind is compared as its typed Go struct (k8s.io/apimachinery third_party/forked/
golang/reflect/deep_equal.go with equateNilAndEmpty: a nil and an empty slice or map are
equal), a custom resource as map[string]interface{} (an interface holding nil is not one
holding an empty slice, and an int64 is not a float64 or a bool). All tests share one server
(``module_api``) and write objects of their own names.
"""

from __future__ import annotations

import zlib
from typing import Any

import pytest
import pytest_asyncio

from tests.cluster.conftest import API
from tests.cluster.fidelity.writes import WIDGETS, create_widget_crd

pytestmark = pytest.mark.asyncio(loop_scope="module")

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
SERVICES = "/api/v1/namespaces/default/services"
PODS = "/api/v1/namespaces/default/pods"
CONTAINERS = [{"name": "c", "image": "nginx"}]


async def _put(api: API, path: str, change: Any) -> dict[str, Any]:
    """Read ``path``, apply ``change`` to it, write it back; the answer of the update."""
    status, current = await api.get(path)
    assert status == 200, current
    change(current)
    status, out = await api.put(path, current)
    assert status == 200, out
    assert isinstance(out, dict)
    return out


def _pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


@pytest.mark.parametrize(("field", "value"), [
    ("tolerations", []), ("tolerations", None), ("nodeSelector", {}), ("volumes", []),
    ("imagePullSecrets", [])])
async def test_a_deployment_spec_differing_by_nil_or_empty_keeps_its_generation(
        module_api: API, field: str, value: Any) -> None:
    """Rule: an update whose template differs from the stored one only by a nil, absent or
    empty list or map is no spec change: the generation stays; a real change moves it.
    Source: pkg/registry/apps/deployment/strategy.go PrepareForUpdate
    (``!apiequality.Semantic.DeepEqual(newDeployment.Spec, oldDeployment.Spec)``)."""
    name = f"nil-empty-{field.lower()}-{'none' if value is None else 'empty'}"
    status, out = await module_api.post(DEPLOYMENTS, {
        "metadata": {"name": name}, "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": CONTAINERS}}}})
    assert status == 201, out
    assert out["metadata"]["generation"] == 1
    out = await _put(module_api, f"{DEPLOYMENTS}/{name}",
                     lambda d: _pod_spec(d).__setitem__(field, value))
    assert out["metadata"]["generation"] == 1
    out = await _put(module_api, f"{DEPLOYMENTS}/{name}",
                     lambda d: _pod_spec(d).__setitem__("hostname", "h"))
    assert out["metadata"]["generation"] == 2


@pytest.mark.parametrize("field", ["endpoints", "ports"])
async def test_an_endpointslice_list_written_empty_for_null_keeps_its_generation(
        module_api: API, field: str) -> None:
    """Rule: an EndpointSlice's ``endpoints`` and ``ports`` (not omitempty: stored empty, they
    read back ``null``) written back as ``[]`` leave the generation where it was.
    Source: pkg/registry/discovery/endpointslice/strategy.go PrepareForUpdate
    (``!apiequality.Semantic.DeepEqual(newEPS, oldEPS)``, metadata aside)."""
    name = f"nil-empty-{field}"
    status, out = await module_api.post(SLICES, {
        "metadata": {"name": name}, "addressType": "IPv4", "endpoints": [], "ports": []})
    assert status == 201, out
    assert out[field] is None
    out = await _put(module_api, f"{SLICES}/{name}", lambda s: s.__setitem__(field, []))
    assert out["metadata"]["generation"] == 1
    out = await _put(module_api, f"{SLICES}/{name}", lambda s: s.__setitem__(
        "endpoints", [{"addresses": ["10.0.0.1"]}]))
    assert out["metadata"]["generation"] == 2


async def test_an_immutable_job_field_written_empty_for_null_is_unchanged(
        module_api: API) -> None:
    """Rule: a Job's ``podFailurePolicy`` with ``rules: []`` for the stored ``rules: null``
    is the same value (no "field is immutable"); a changed policy is refused.
    Source: pkg/apis/batch/validation/validation.go ValidateJobSpecUpdate, through
    pkg/apis/core/validation ValidateImmutableField (apiequality.Semantic.DeepEqual)."""
    status, out = await module_api.post(JOBS, {"metadata": {"name": "nil-empty-job"}, "spec": {
        "podFailurePolicy": {"rules": []},
        "template": {"spec": {"restartPolicy": "Never", "containers": CONTAINERS}}}})
    assert status == 201, out
    path = f"{JOBS}/nil-empty-job"
    out = await _put(module_api, path,
                     lambda j: j["spec"]["podFailurePolicy"].__setitem__("rules", []))
    assert out["metadata"]["generation"] == 1
    status, current = await module_api.get(path)
    current["spec"]["podFailurePolicy"]["rules"] = [{"action": "FailJob", "onExitCodes": {
        "operator": "In", "values": [3]}}]
    status, out = await module_api.put(path, current)
    assert status == 422, out
    assert [c["field"] for c in out["details"]["causes"]] == ["spec.podFailurePolicy"]


async def test_services_and_pods_keep_no_generation(module_api: API) -> None:
    """Rule: Services and Pods have no generation in 1.32: their strategies' PrepareForUpdate
    never set one, and rest.BeforeUpdate keeps the stored (absent) one, whatever changes.
    Source: pkg/registry/core/service/strategy.go and pkg/registry/core/pod/strategy.go
    (PrepareForUpdate: no Generation), k8s.io/apiserver pkg/registry/rest/update.go
    BeforeUpdate ("Ensure requests cannot update generation")."""
    status, out = await module_api.post(SERVICES, {
        "metadata": {"name": "nil-empty-svc"}, "spec": {"ports": [{"port": 80}]}})
    assert status == 201, out
    out = await _put(module_api, f"{SERVICES}/nil-empty-svc", lambda s: s["spec"].update(
        {"ports": [{"port": 81}], "externalIPs": [], "selector": {}}))
    assert out["spec"]["ports"][0]["port"] == 81
    assert "generation" not in out["metadata"]
    status, out = await module_api.post(PODS, {
        "metadata": {"name": "nil-empty-pod"}, "spec": {"containers": CONTAINERS}})
    assert status == 201, out
    out = await _put(module_api, f"{PODS}/nil-empty-pod", lambda p: p["spec"].update(
        {"tolerations": [], "activeDeadlineSeconds": 30}))
    assert out["spec"]["activeDeadlineSeconds"] == 30
    assert "generation" not in out["metadata"]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def widgets(module_api: API) -> API:
    await create_widget_crd(module_api)
    return module_api


@pytest.mark.parametrize(("before", "after", "moves"), [
    ({}, {"x": {}}, True),            # a key added, even empty: maps of different lengths
    ({"x": None}, {"x": []}, True),   # an interface holding nil, one holding a slice
    ({"x": []}, {"x": []}, False),
    ({"x": 1}, {"x": True}, True),    # int64 and bool: different types
    ({"x": 1}, {"x": 1.5}, True),
    ({"x": {"y": [1, "a"]}}, {"x": {"y": [1, "a"]}}, False),
])
async def test_a_custom_resource_generation_follows_the_unstructured_comparison(
        widgets: API, before: dict[str, Any], after: dict[str, Any], moves: bool) -> None:
    """Rule: a custom resource's generation moves when anything but metadata (and status,
    with the status subresource) differs as map[string]interface{}: nil and empty are not
    equal there, nor values of different Go types.
    Source: apiextensions-apiserver pkg/registry/customresource/strategy.go PrepareForUpdate
    (``!apiequality.Semantic.DeepEqual(newCopyContent, oldCopyContent)``); apimachinery
    third_party/forked/golang/reflect/deep_equal.go (reflect.Interface: nil only equals nil;
    values of different types are unequal)."""
    name = f"gen-{zlib.crc32(repr((before, after)).encode())}"
    status, out = await widgets.post(WIDGETS, {
        "apiVersion": "fidelity.example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": {"size": 1, "free": before}})
    assert status == 201, out
    out = await _put(widgets, f"{WIDGETS}/{name}", lambda w: w["spec"].__setitem__(
        "free", after))
    assert out["metadata"]["generation"] == (2 if moves else 1)
